// Go's own resolver (net.Resolver{PreferGo: true}, GODEBUG=netdns=go) as
// a program calls it, for the resolver matrix (tests/resolvers.rs). Reads
// "ID KIND NAME" lines on stdin and prints "ID MILLISECONDS ok VALUE..." or
// "ID MILLISECONDS err CLASS DETAIL". Kinds: host (LookupHost), srv
// (LookupSRV of the whole name), cname (LookupCNAME), ptr (LookupAddr).
// Standard library only: it builds with no network.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

func classify(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		switch {
		case dnsErr.IsNotFound:
			return "err notfound " + dnsErr.Error()
		case dnsErr.IsTimeout:
			return "err timeout " + dnsErr.Error()
		case dnsErr.IsTemporary:
			return "err temp " + dnsErr.Error()
		}
	}
	return "err error " + err.Error()
}

func lookup(r *net.Resolver, kind, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var values []string
	var err error
	switch kind {
	case "host":
		values, err = r.LookupHost(ctx, name)
	case "srv":
		var srvs []*net.SRV
		_, srvs, err = r.LookupSRV(ctx, "", "", name)
		for _, s := range srvs {
			values = append(values, fmt.Sprintf("%d:%d:%d:%s", s.Priority, s.Weight, s.Port, s.Target))
		}
	case "cname":
		var c string
		c, err = r.LookupCNAME(ctx, name)
		values = []string{c}
	case "ptr":
		values, err = r.LookupAddr(ctx, name)
	default:
		return "skip"
	}
	if err != nil {
		return classify(err)
	}
	return "ok " + strings.Join(values, " ")
}

func main() {
	r := &net.Resolver{PreferGo: true}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 3 {
			continue
		}
		start := time.Now()
		out := lookup(r, f[1], f[2])
		if out == "skip" {
			continue
		}
		fmt.Printf("%s %d %s\n", f[0], time.Since(start).Milliseconds(), out)
	}
}
