package secrets

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of HashPassword: OWASP's second recommended set
// (19 MiB, t=2, p=1), cheap enough that a burst of logins (or of gateway
// Basic credentials) does not exhaust memory.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// Limits on the parameters of a stored hash: a hash naming more would let
// whoever wrote it exhaust the host that checks it.
const (
	maxArgonMemory = 256 * 1024
	maxArgonTime   = 16
	maxArgonKeyLen = 64
)

// argonSlots bounds concurrent argon2id runs in the process: each holds
// its memory parameter (19 MiB by default), so a burst costs queueing
// time, not memory.
var argonSlots = make(chan struct{}, max(2, runtime.NumCPU()))

func argonKey(pw, salt []byte, t, m uint32, p uint8, n uint32) []byte {
	argonSlots <- struct{}{}
	defer func() { <-argonSlots }()
	return argon2.IDKey(pw, salt, t, m, p, n)
}

// HashPassword is the stored form of a password: argon2id with a random
// 16-byte salt, as a PHC string
// $argon2id$v=19$m=<KiB>,t=<n>,p=<n>$<salt b64>$<key b64> (unpadded
// standard base64).
func HashPassword(pw string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argonKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// PasswordHash is a parsed argon2id PHC string.
type PasswordHash struct {
	Time, Memory uint32
	Threads      uint8
	Salt, Key    []byte
}

// ParsePasswordHash reads a PHC string HashPassword wrote (any parameters
// within the limits); the error says which part is wrong, never echoing
// the value.
func ParsePasswordHash(encoded string) (PasswordHash, error) {
	var h PasswordHash
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return h, fmt.Errorf("must be an argon2id PHC string $argon2id$v=19$m=<KiB>,t=<n>,p=<n>$<salt>$<hash>")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return h, fmt.Errorf("argon2id version must be v=%d", argon2.Version)
	}
	var params [3]uint64
	fields := strings.Split(parts[3], ",")
	if len(fields) != 3 {
		return h, fmt.Errorf("argon2id parameters must be m=<KiB>,t=<n>,p=<n>")
	}
	for i, name := range []string{"m=", "t=", "p="} {
		v, ok := strings.CutPrefix(fields[i], name)
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil || n == 0 {
			return h, fmt.Errorf("argon2id parameters must be m=<KiB>,t=<n>,p=<n> with positive numbers")
		}
		params[i] = n
	}
	if params[0] > maxArgonMemory || params[1] > maxArgonTime || params[2] > 255 || params[0] < 8*params[2] {
		return h, fmt.Errorf("argon2id parameters out of range (m 8·p-%d KiB, t 1-%d, p 1-255)", maxArgonMemory, maxArgonTime)
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > maxArgonKeyLen {
		return h, fmt.Errorf("argon2id salt (8 bytes or more) and hash (16-%d bytes) must be unpadded base64", maxArgonKeyLen)
	}
	return PasswordHash{Memory: uint32(params[0]), Time: uint32(params[1]), Threads: uint8(params[2]), Salt: salt, Key: key}, nil
}

// Check compares pw with the hash in constant time.
func (h PasswordHash) Check(pw string) bool {
	if len(h.Key) == 0 {
		return false
	}
	got := argonKey([]byte(pw), h.Salt, h.Time, h.Memory, h.Threads, uint32(len(h.Key)))
	return subtle.ConstantTimeCompare(got, h.Key) == 1
}

// CheckPassword compares pw with a HashPassword string in constant time;
// a malformed hash never matches.
func CheckPassword(encoded, pw string) bool {
	h, err := ParsePasswordHash(encoded)
	if err != nil {
		return false
	}
	return h.Check(pw)
}
