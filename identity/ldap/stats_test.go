package ldap

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	ber "github.com/go-asn1-ber/asn1-ber"
	goldap "github.com/go-ldap/ldap/v3"
)

// counter is a plain-LDAP proxy on loopback that counts the connections
// made to it and the search requests sent through it. Without a target it
// closes every connection at once: a server that is down.
type counter struct {
	URL             string
	conns, searches atomic.Uint64
}

func newCounter(t testing.TB, target string) *counter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &counter{URL: "ldap://" + ln.Addr().String()}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			go c.relay(client, target)
		}
	}()
	return c
}

func (c *counter) relay(client net.Conn, target string) {
	defer client.Close()
	if target == "" {
		return
	}
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	for {
		p, err := ber.ReadPacket(client)
		if err != nil {
			return
		}
		// An LDAPMessage is a message id and the operation.
		if len(p.Children) > 1 && p.Children[1].Tag == goldap.ApplicationSearchRequest {
			c.searches.Add(1)
		}
		if _, err := server.Write(p.Bytes()); err != nil {
			return
		}
	}
}

// openConns returns the number of connections idle or in use.
func (r *Resolver) openConns() int {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	return len(r.pool.idle) + len(r.pool.slots)
}
