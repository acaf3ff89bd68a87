// Package ui is crewd's web UI, served under /ui/ on the API's port from
// files compiled into the binary: the jobs by state and queue, a page of
// jobs filtered by state and kind, a job with its attempts, and the
// actions an operator takes (cancel, retry, pause and resume a queue); the
// failed jobs grouped by kind and error, a group retried in one action.
//
// Who may use it is the API's rule: where crewd asks for tokens, a login
// with one sets a session cookie (HttpOnly, SameSite=Strict, Secure over
// TLS) holding it, so that every replica checks it against the same token
// file and a revoked token ends its sessions; pages ask for jobs:read,
// actions for jobs:admin. Every action is a POST carrying a CSRF token
// derived from the session, from the UI's own origin: a form posted from
// another site is refused.
package ui
