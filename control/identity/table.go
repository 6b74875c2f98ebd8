package identity

import (
	"time"

	"deckhand/platform/store"
)

// usersTable declares the accounts' bucket as a table: an operator reads
// users with SQL on PostgreSQL (the table identity_users: username, email,
// role, region, created_at beside the record), and the admin list is a
// store page in creation order. Secrets stay in the record, hashed or
// sealed; no field derives from them.
var usersTable = store.Declare(bucketUsers, []store.Field[userRec]{
	store.Text("username", func(u *userRec) string { return u.Username }),
	store.OptionalText("email", func(u *userRec) string { return u.Email }),
	store.Text("role", func(u *userRec) string { return u.Role }),
	store.OptionalText("region", func(u *userRec) string { return u.Region }),
	store.Time("created_at", func(u *userRec) time.Time { return u.CreatedAt }),
}, store.Index{Fields: []string{"created_at"}, Sort: true})

// tokensTable declares the auth tokens' bucket as a table: a user's list
// is one page of the index over user_id and created_at, not a pass over
// every user's tokens.
var tokensTable = store.Declare(bucketTokens, []store.Field[tokenRec]{
	store.Text("user_id", func(t *tokenRec) string { return t.UserID }),
	store.Time("created_at", func(t *tokenRec) time.Time { return t.CreatedAt }),
}, store.Index{Fields: []string{"user_id", "created_at"}, Sort: true})

// Tables are the tables this package declares.
var Tables = []*store.Table{usersTable, tokensTable}
