package secrets_test

import (
	"strings"
	"testing"

	"deckhand/platform/secrets"
)

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h, err := secrets.HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if h2, _ := secrets.HashPassword("correct horse"); h2 == h {
		t.Fatal("two hashes of one password are equal (salt reuse)")
	}
	if !secrets.CheckPassword(h, "correct horse") || secrets.CheckPassword(h, "correct horse ") || secrets.CheckPassword(h, "") {
		t.Fatal("check")
	}
	parts := strings.Split(h, "$")
	salt, key := parts[4], parts[5]
	for _, bad := range []string{
		"", "plain", "$argon2i$v=19$m=19456,t=2,p=1$" + salt + "$" + key,
		"$argon2id$v=18$m=19456,t=2,p=1$" + salt + "$" + key,
		"$argon2id$v=19$m=999999,t=2,p=1$" + salt + "$" + key, // memory past the limit
		"$argon2id$v=19$m=19456,t=99,p=1$" + salt + "$" + key,
		"$argon2id$v=19$m=19456,t=0,p=1$" + salt + "$" + key,
		"$argon2id$v=19$m=19456,t=2$" + salt + "$" + key,
		"$argon2id$v=19$m=19456,t=2,p=1$$" + key,
		"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key[:10],
		"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key + "==",
	} {
		if _, err := secrets.ParsePasswordHash(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
		if secrets.CheckPassword(bad, "correct horse") {
			t.Errorf("%q matched", bad)
		}
	}
}
