package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/gateway"
)

const httpTokenUsage = `Usage:
  processor http-token add --tokens FILE --name NAME --tenant TENANT [--agent-id ID]
  processor http-token add --tokens FILE --name NAME --tenant TENANT --cert-uri URI|--cert-dns NAME|--cert-subject DN

Adds a caller of the HTTP endpoint to the callers file given to --http-tokens
(created, mode 0600, when missing). Without a --cert-* flag a random bearer
token is made: it is printed once, on standard output, and only its SHA-256
is written to the file. With one, the caller is the client certificate with
that identity (verified against --http-client-ca). The processor reads the
file at start: restart it to admit the new caller.

Flags:
`

// httpTokenCommand runs "processor http-token …" and returns the exit code.
func httpTokenCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprint(stderr, httpTokenUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	var file string
	var c gateway.Caller
	fs := flag.NewFlagSet("http-token add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&file, "tokens", "", "the callers file (default $"+cliflag.EnvName("http-tokens")+")")
	fs.StringVar(&c.Name, "name", "", "the caller's name, unique in the file (dead letters and logs carry it)")
	fs.StringVar(&c.Tenant, "tenant", "", "the tenant of everything the caller sends")
	fs.StringVar(&c.AgentID, "agent-id", "", "the only metadata.agent_id the caller may send (default: any)")
	fs.StringVar(&c.CertURI, "cert-uri", "", "a certificate caller: a URI SAN of its client certificate (e.g. a SPIFFE id)")
	fs.StringVar(&c.CertDNS, "cert-dns", "", "a certificate caller: a DNS SAN of its client certificate")
	fs.StringVar(&c.CertSubject, "cert-subject", "", `a certificate caller: its certificate's subject, RFC 2253 form ("CN=ci,O=Acme")`)
	fs.Usage = cliflag.Usage(fs, httpTokenUsage, "")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if file == "" {
		file = os.Getenv(cliflag.EnvName("http-tokens"))
	}
	if file == "" || c.Name == "" || c.Tenant == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "processor: http-token add needs --tokens, --name and --tenant (see --help)")
		return 2
	}
	var token string
	if c.CertURI == "" && c.CertDNS == "" && c.CertSubject == "" {
		var err error
		if token, c.TokenSHA256, err = gateway.NewToken(); err != nil {
			fmt.Fprintln(stderr, "processor:", err)
			return 1
		}
	}
	if err := gateway.AppendCaller(file, c); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	if token == "" {
		fmt.Fprintf(stderr, "added certificate caller %q (tenant %s) to %s\n", c.Name, c.Tenant, file)
		return 0
	}
	fmt.Fprintf(stderr, "added caller %q (tenant %s) to %s; its bearer token, shown this once:\n", c.Name, c.Tenant, file)
	fmt.Fprintln(stdout, token)
	return 0
}
