package ldap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// downFor is how long a server that could not be reached is tried after the others.
const downFor = 30 * time.Second

// errClosed is returned by lookups on a closed Resolver.
var errClosed = errors.New("ldap: resolver is closed")

// conn is one bound connection to a server. raw is the TCP connection
// under any TLS, on which deadlines are set.
type conn struct {
	l      *goldap.Conn
	raw    net.Conn
	url    string
	broken bool // a network error or a cancelled operation left it unusable
}

// guard makes blocked reads and writes fail once ctx ends (the deadline
// is set only then, so such a failure always finds ctx.Err() set). The
// returned function ends the guard and, if ctx ended, marks the
// connection broken: an aborted exchange leaves it in an unknown state.
func (c *conn) guard(ctx context.Context) (end func()) {
	stop := context.AfterFunc(ctx, func() { _ = c.raw.SetDeadline(time.Unix(1, 0)) })
	return func() {
		if !stop() {
			c.broken = true
		}
	}
}

func (c *conn) usable() bool { return !c.broken && !c.l.IsClosing() }

func (c *conn) close() { _ = c.l.Close() }

// pool holds at most size connections, idle or in use: a slot is taken
// for each in use, and a new one is dialled only when none is idle.
type pool struct {
	slots chan struct{}
	dial  func(ctx context.Context) (*conn, error)

	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// get returns a connection, reused when one is idle, waiting for a free slot until ctx ends.
func (p *pool) get(ctx context.Context) (c *conn, reused bool, err error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, false, errClosed
	}
	var stale []*conn
	for len(p.idle) > 0 && c == nil {
		c = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.usable() {
			stale, c = append(stale, c), nil
		}
	}
	p.mu.Unlock()
	for _, s := range stale {
		s.close()
	}
	if c != nil {
		return c, true, nil
	}
	c, err = p.dial(ctx)
	if err != nil {
		<-p.slots
		return nil, false, err
	}
	return c, false, nil
}

// put returns c to the pool, or closes it if it is no longer usable.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	if c.usable() && !p.closed {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.close()
	}
	<-p.slots
}

// flush closes the idle connections: after one failed, the others, made to
// the same server, likely have too.
func (p *pool) flush() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// close closes the idle connections and makes every later get fail;
// connections in use are closed when they are put back.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.flush()
}

// dial connects to the first server that answers, those that failed in
// the last downFor last. A refused bind stops the search: the credentials,
// not the network, are wrong.
func (r *Resolver) dial(ctx context.Context) (*conn, error) {
	var msgs []string
	var errs []error
	for _, i := range r.serverOrder() {
		u := r.urls[i]
		c, err := r.dialURL(ctx, u)
		if err == nil {
			r.markDown(i, time.Time{})
			return c, nil
		}
		if _, ok := errors.AsType[*bindError](err); ok {
			return nil, err
		}
		if ctx.Err() != nil {
			// A server that used up the whole timeout (one that drops packets,
			// say) is down; a caller that gave up says nothing about it.
			if errors.Is(context.Cause(ctx), r.timeout) {
				r.markDown(i, r.now().Add(downFor))
			}
			return nil, ctxError(ctx, "connect to "+u.String())
		}
		r.markDown(i, r.now().Add(downFor))
		msgs = append(msgs, u.String()+": "+err.Error())
		errs = append(errs, err)
	}
	return nil, &ldapError{msg: "ldap: cannot connect to any server: " + strings.Join(msgs, "; "), err: errors.Join(errs...)}
}

func (r *Resolver) serverOrder() []int {
	now := r.now()
	r.downMu.Lock()
	defer r.downMu.Unlock()
	var order, later []int
	for i, until := range r.downUntil {
		if now.Before(until) {
			later = append(later, i)
		} else {
			order = append(order, i)
		}
	}
	return append(order, later...)
}

// markDown makes server i tried after the others until t (zero: at once).
func (r *Resolver) markDown(i int, t time.Time) {
	r.downMu.Lock()
	r.downUntil[i] = t
	r.downMu.Unlock()
}

// bindError is a bind the server refused.
type bindError struct{ ldapError }

func (r *Resolver) dialURL(ctx context.Context, u *url.URL) (_ *conn, err error) {
	host := u.Host
	if u.Port() == "" {
		port := "389"
		if u.Scheme == "ldaps" {
			port = "636"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	c := &conn{raw: raw, url: u.String()}
	end := c.guard(ctx)
	defer func() {
		end()
		if err != nil {
			if c.l != nil {
				c.close()
			} else {
				raw.Close()
			}
		}
	}()

	var nc net.Conn = raw
	if u.Scheme == "ldaps" {
		tc := tls.Client(raw, r.tlsConfig(u))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	c.l = goldap.NewConn(nc, u.Scheme == "ldaps")
	c.l.Start()
	// The deadlines set by guard bound every exchange; go-ldap's own
	// timeout only backs them up.
	c.l.SetTimeout(r.cfg.Timeout + time.Second)
	if u.Scheme == "ldap" && r.cfg.StartTLS {
		if err := c.l.StartTLS(r.tlsConfig(u)); err != nil {
			return nil, fmt.Errorf("StartTLS: %s", describe(err))
		}
	}
	if r.cfg.BindDN == "" {
		return c, nil
	}
	password, err := r.password()
	if err != nil {
		return nil, &bindError{ldapError{msg: err.Error(), err: err}}
	}
	if err := c.l.Bind(r.cfg.BindDN, password); err != nil {
		if answered(err) {
			return nil, &bindError{ldapError{msg: fmt.Sprintf("ldap: bind as %s failed: %s", r.cfg.BindDN, describe(err)), err: err}}
		}
		return nil, fmt.Errorf("bind as %s: %s", r.cfg.BindDN, describe(err))
	}
	return c, nil
}

func (r *Resolver) tlsConfig(u *url.URL) *tls.Config {
	cfg := r.tlsBase.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	return cfg
}
