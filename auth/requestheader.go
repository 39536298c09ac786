package auth

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// RequestHeader authenticates the requests an aggregating API server
// proxies, as extension API servers do: a client certificate from the
// front proxy's CA, with an allowed name, vouches for the user, groups and
// extra in the request's headers. Without that certificate the headers
// are never read.
type RequestHeader struct {
	proxy                        ClientCertAuthenticator
	names                        []string // allowed common names; empty: any
	users, groups, extraPrefixes []string
}

// NewRequestHeader reads the front proxy's settings as kube-apiserver
// publishes them in the ConfigMap kube-system/extension-apiserver-authentication.
func NewRequestHeader(data map[string]string) (*RequestHeader, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(data["requestheader-client-ca-file"])) {
		return nil, errors.New("requestheader-client-ca-file holds no PEM certificate: kube-apiserver runs without --requestheader-client-ca-file, so it proxies no aggregated API")
	}
	a := &RequestHeader{proxy: ClientCertAuthenticator{roots: pool}}
	for key, dst := range map[string]*[]string{"requestheader-allowed-names": &a.names, "requestheader-username-headers": &a.users,
		"requestheader-group-headers": &a.groups, "requestheader-extra-headers-prefix": &a.extraPrefixes} {
		if v := data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), dst); err != nil {
				return nil, fmt.Errorf("%s: want a JSON list of strings: %w", key, err)
			}
		}
	}
	if len(a.users) == 0 {
		return nil, errors.New("requestheader-username-headers is empty: no header names the user")
	}
	return a, nil
}

// AuthenticateRequest implements Authenticator.
func (a *RequestHeader) AuthenticateRequest(r *http.Request) (User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return User{}, false, nil
	}
	proxy, err := a.proxy.Verify(r.TLS.PeerCertificates)
	if err != nil || len(a.names) > 0 && !slices.Contains(a.names, proxy.Name) {
		return User{}, false, nil
	}
	var u User
	for _, h := range a.users {
		if u.Name = r.Header.Get(h); u.Name != "" {
			break
		}
	}
	if u.Name == "" {
		return User{}, false, nil
	}
	for _, h := range a.groups {
		u.Groups = append(u.Groups, r.Header.Values(h)...)
	}
	for name, vs := range r.Header {
		for _, p := range a.extraPrefixes {
			if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
				key, err := url.PathUnescape(strings.ToLower(name[len(p):]))
				if err != nil {
					continue
				}
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				u.Extra[key] = append(u.Extra[key], vs...)
			}
		}
	}
	return u, true, nil
}
