package auth

import "strings"

// MaxToken bounds a bearer token's length: a longer one is no token.
const MaxToken = 512

// Bearer reads the token of an Authorization header's value: "Bearer "
// (any case), then the token, RFC 6750's characters only. ok is false
// for another scheme, an empty or overlong token, or a character a token
// has not.
func Bearer(header string) (token string, ok bool) {
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || len(token) > MaxToken {
		return "", false
	}
	end := len(token)
	for end > 0 && token[end-1] == '=' {
		end--
	}
	if end == 0 {
		return "", false
	}
	for i := 0; i < end; i++ {
		c := token[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			return "", false
		}
	}
	return token, true
}
