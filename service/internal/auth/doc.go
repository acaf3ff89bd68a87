// Package auth decides who may call crewd's API: bearer tokens, each with
// a name and scopes, kept hashed in a file that is read again when it
// changes (a rotated Kubernetes Secret takes effect without a restart).
//
// A token is "crew_" and 43 characters of base64url (32 random bytes); the
// file keeps its SHA-256, never the token: a reader of the file, a backup
// or a log cannot call the API with it. A line of the file is
//
//	name sha256:<64 hex digits> scope,scope...
//
// with # comments and blank lines allowed. The scopes are jobs:read,
// jobs:submit and jobs:admin (see Scope); each route asks for one. New
// makes a token and its line; crewd token new prints them.
package auth
