package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/crew-go/crew/service/internal/auth"
)

// cookieName is the session cookie: the token the user logged in with.
const cookieName = "crewd_session"

// sessionAge bounds a session: after it, log in again.
const sessionAge = 12 * time.Hour

// session is who uses the UI and the CSRF token of their forms.
type session struct {
	caller auth.Caller
	csrf   string
}

// session reads r's session: the cookie's token, checked against the
// token file now; anyone where crewd serves without tokens.
func (u *UI) session(r *http.Request) (session, bool) {
	if u.Auth == nil {
		return session{caller: auth.Anyone(), csrf: u.csrfOf(u.processKey[:])}, true
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	token, ok := auth.Bearer("Bearer " + c.Value)
	if !ok {
		return session{}, false
	}
	caller, ok := u.Auth.Tokens().Lookup(token)
	if !ok {
		return session{}, false
	}
	h := sha256.Sum256([]byte(token))
	return session{caller: caller, csrf: u.csrfOf(h[:])}, true
}

// csrfOf is the CSRF token of a session whose secret is key: the same on
// every replica, unknown to another site.
func (u *UI) csrfOf(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("crewd ui csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// setSession sets the session cookie to token.
func setSession(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/ui/", MaxAge: int(sessionAge / time.Second),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// secure reports whether r came over TLS, to crewd or to the proxy in
// front of it.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// validCSRF reports whether a form's csrf field is the session's.
func validCSRF(s session, given string) bool {
	return hmac.Equal([]byte(s.csrf), []byte(given))
}
