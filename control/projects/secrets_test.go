package projects_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"deckhand/control/projects"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

const docBucket = "projects_proxyperm"

func rawDoc(t *testing.T, db *store.DB, key string) string {
	t.Helper()
	var raw string
	if err := db.View(func(tx *store.Tx) error { raw = string(tx.GetRaw(docBucket, key)); return nil }); err != nil {
		t.Fatal(err)
	}
	if raw == "" {
		t.Fatalf("no record %s", key)
	}
	return raw
}

func mustNotHold(t *testing.T, what, body string, secretValues ...string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(body, v) {
			t.Fatalf("%s holds the secret %q:\n%s", what, v, body)
		}
	}
}

// A document's secrets are sealed at rest, shown to people masked, sent in
// clear only on the effective route, and a store written before sealing is
// sealed at start. Both engines.
func TestDocumentSecretsSealedMaskedAndMigrated(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			db, reopen := eng.Open(t)
			e := newEnv(t, func(testing.TB) (*store.DB, func() *store.DB) { return db, reopen })
			p, _ := e.svc.CreateProject(as("alice"), projects.ProjectInput{Name: "P"})
			for _, id := range []string{"c1", "c2"} {
				if _, err := e.svc.AdminCreateContainer(admin(), projects.AdminContainerInput{ProjectID: p.ID, Name: id, ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.svc.Grant(as("alice"), projects.GrantRequest{ProjectRef: projects.ProjectRef{ID: p.ID}, Body: projects.GrantInput{UserID: "bob", Role: projects.RoleOperator}}); err != nil {
				t.Fatal(err)
			}
			ctx := as("alice")
			groups := []struct {
				name string
				g    proxyperm.Group
			}{
				{"tok", proxyperm.Group{Type: "token", Header: "X-Key", Value: "tok-secret-value"}},
				{"hs", proxyperm.Group{Type: "jwt", Algorithm: "HS256", Secret: "hs-secret-value", Sources: []string{"header:A"}}},
				{"pw", proxyperm.Group{Type: "password", Username: "ops", Password: "pw-plain-value"}},
			}
			for i, g := range groups {
				if err := g.g.Validate(""); err != nil {
					t.Fatal(err)
				}
				if err := g.g.Normalize(); err != nil {
					t.Fatal(err)
				}
				if _, err := e.svc.PutContainerGroup(ctx, "c1", int64(i), g.name, g.g); err != nil {
					t.Fatal(err)
				}
			}
			eff, err := e.svc.GetEffective(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			hash := eff.Groups["pw"].Password
			if eff.Groups["tok"].Value != "tok-secret-value" || eff.Groups["hs"].Secret != "hs-secret-value" ||
				!secrets.CheckPassword(hash, "pw-plain-value") {
				t.Fatalf("effective document lost its secrets: %+v", eff.Groups)
			}
			mustNotHold(t, "the stored record", rawDoc(t, db, "c/c1"), "tok-secret-value", "hs-secret-value", hash, "pw-plain-value")

			masked, err := e.svc.ContainerDocument(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			mb, _ := json.Marshal(masked)
			mustNotHold(t, "the document people read", string(mb), "tok-secret-value", "hs-secret-value", hash, "pw-plain-value")
			if g := masked.Groups["tok"]; !g.ValueConfigured || g.Header != "X-Key" {
				t.Fatalf("masked token group %+v", g)
			}

			// The masked document PUTs back unchanged, also by an operator;
			// an operator setting a new secret is refused, a manager's
			// setting passes.
			back, err := proxyperm.Decode(mb)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.ReplaceContainerDocument(as("bob"), "c1", 3, back); err != nil {
				t.Fatalf("operator writes the masked document back: %v", err)
			}
			if eff, _ := e.svc.GetEffective(ctx, "c1"); eff.Groups["tok"].Value != "tok-secret-value" || eff.Groups["pw"].Password != hash {
				t.Fatalf("write-back changed the secrets: %+v", eff.Groups)
			}
			if _, err := e.svc.PutContainerGroup(as("bob"), "c1", 4, "tok", proxyperm.Group{Type: "token", Header: "X-Key", Value: "bobs-own"}); code(err) != fault.CodeForbidden {
				t.Fatalf("operator sets a token value: %v", err)
			}
			if _, err := e.svc.PutContainerGroup(as("bob"), "c1", 4, "tok", proxyperm.Group{Type: "token", Header: "X-Other", ValueConfigured: true}); err != nil {
				t.Fatalf("operator renames the header, keeping the value: %v", err)
			}
			if _, err := e.svc.PutContainerGroup(as("bob"), "c1", 5, "lan", proxyperm.Group{Type: "ip", Range: "10.0.0.0/8"}); err != nil {
				t.Fatalf("operator adds an ip group: %v", err)
			}
			if _, err := e.svc.PutContainerGroup(as("alice"), "c1", 6, "none", proxyperm.Group{Type: "token", Header: "X", ValueConfigured: true}); code(err) != fault.CodeInvalid {
				t.Fatalf("a masked value with none stored: %v", err)
			}
			if _, err := e.svc.Grant(as("alice"), projects.GrantRequest{ProjectRef: projects.ProjectRef{ID: p.ID}, Body: projects.GrantInput{UserID: "carol", Role: projects.RoleManager}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.PutContainerGroup(as("carol"), "c1", 6, "tok", proxyperm.Group{Type: "token", Header: "X-Key", Value: "carols"}); err != nil {
				t.Fatalf("manager sets a token value: %v", err)
			}

			// A store written before sealing: the project's document in clear.
			legacy := proxyperm.Document{Project: p.ID, Container: "*", Default: "deny", FileVersion: 1,
				Groups: map[string]proxyperm.Group{
					"old": {Type: "token", Param: "k", Value: "legacy-token-value"},
					"hs":  {Type: "jwt", Algorithm: "HS256", Secret: "legacy-hs-secret", Sources: []string{"cookie:t"}},
					"pre": {Type: "password", Username: "u", Password: proxyperm.HashPassword("legacy-salt", "x"), Algorithm: "sha256", Salt: "legacy-salt"},
				},
				Permissions: map[string]proxyperm.Rules{}}
			if err := db.Update(func(tx *store.Tx) error { return tx.Put(docBucket, "p/"+p.ID, legacy) }); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rawDoc(t, db, "p/"+p.ID), "legacy-token-value") {
				t.Fatal("the legacy record is not in clear: the migration case did not run")
			}
			if err := e.svc.Bootstrap(context.Background()); err != nil {
				t.Fatal(err)
			}
			mustNotHold(t, "the migrated record", rawDoc(t, db, "p/"+p.ID), "legacy-token-value", "legacy-hs-secret", legacy.Groups["pre"].Password)
			eff, err = e.svc.GetEffective(ctx, "c2")
			if err != nil {
				t.Fatal(err)
			}
			if eff.Groups["old"].Value != "legacy-token-value" || eff.Groups["hs"].Secret != "legacy-hs-secret" || eff.Groups["pre"].Password != legacy.Groups["pre"].Password {
				t.Fatalf("migrated document does not open: %+v", eff.Groups)
			}
			if err := e.svc.Bootstrap(context.Background()); err != nil { // again: nothing to do
				t.Fatal(err)
			}
			if eff2, _ := e.svc.GetEffective(ctx, "c2"); eff2.Groups["old"].Value != "legacy-token-value" {
				t.Fatal("a second start sealed the sealed values again")
			}
		})
	}
}
