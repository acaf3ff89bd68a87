package auth

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Foreign says why r is refused as a browser's request from another site,
// or, when localOnly (crewd without tokens on loopback), to a name that is
// not this machine's; "" when it is not. A browser sends Origin (and
// Sec-Fetch-Site) with a cross-origin request, even one whose answer it
// may not read: a page on another site could otherwise post a job to a
// crewd on the user's machine, or, with a name it points at 127.0.0.1
// (DNS rebinding), read its jobs. crewd answers no cross-origin browser
// request (it sends no CORS headers); clients that are not browsers send
// neither header.
func Foreign(r *http.Request, localOnly bool) string {
	if why := CrossSite(r); why != "" {
		return why
	}
	return NotLocal(r, localOnly)
}

// CrossSite says why r is a browser's request from another site, or "".
func CrossSite(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return "a request from another site (Sec-Fetch-Site: " + site + ") is refused"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "a request from another origin (Origin " + short(origin) + ") is refused"
		}
	}
	return ""
}

// NotLocal says why r, when localOnly, names a host that is not this
// machine (DNS rebinding), or "".
func NotLocal(r *http.Request, localOnly bool) string {
	if localOnly && !LocalHost(r.Host) {
		return "crewd serves this machine only (no -api-tokens): a request to host " + short(r.Host) + " is refused; use localhost or 127.0.0.1"
	}
	return ""
}

// LocalHost reports whether a Host header names this machine: localhost
// or a loopback address, with or without a port.
func LocalHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// short quotes s, cut to 64 bytes: a hostile header is not echoed whole.
func short(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
