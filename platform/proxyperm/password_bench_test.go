package proxyperm_test

import (
	"encoding/base64"
	"strconv"
	"testing"

	"deckhand/platform/proxyperm"
)

// BenchmarkPassword is one Basic-credential request against a password
// group: the argon2id hash checked in full (a new password each time, as a
// guesser sends), the same credential again (remembered), and a pre-hashed
// sha256 group.
func BenchmarkPassword(b *testing.B) {
	p := compileJSON(b, `{"project":"p","container":"c","groups":{
		"a":{"type":"password","username":"alice","password":"correct horse"},
		"s":{"type":"password","username":"sam","password":"`+proxyperm.HashPassword("salt", "old horse")+`","algorithm":"sha256","salt":"salt"}},
		"permissions":{"a":{"services":true},"s":{"services":true}}}`)
	run := func(b *testing.B, user string, pw func(i int) string, want proxyperm.Outcome) {
		for i := 0; b.Loop(); i++ {
			auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw(i)))
			f := req{program: "services", port: 1, headers: map[string]string{"Authorization": auth}}.facts()
			if d := p.Evaluate(f, nil); d.Outcome != want {
				b.Fatalf("outcome %v", d.Outcome)
			}
		}
	}
	b.Run("argon2id-wrong", func(b *testing.B) {
		run(b, "alice", func(i int) string { return "guess " + strconv.Itoa(i) }, proxyperm.Unauthorized)
	})
	b.Run("argon2id-remembered", func(b *testing.B) {
		run(b, "alice", func(int) string { return "correct horse" }, proxyperm.Allowed)
	})
	b.Run("sha256", func(b *testing.B) {
		run(b, "sam", func(int) string { return "old horse" }, proxyperm.Allowed)
	})
}
