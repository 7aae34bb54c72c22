package cliflag

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// Usage spells flags --flag, as the README does, with flag.PrintDefaults'
// layout and defaults.
func TestPrintDefaults(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("nats-url", "", "NATS server `url`")
	fs.String("tenant", "default", "the tenant")
	fs.Duration("timeout", 5*time.Second, "how long")
	fs.Bool("json", false, "print JSON")
	fs.Int("n", 0, "how many")
	var l List
	fs.Var(&l, "rules", "rule file")
	var b strings.Builder
	fs.SetOutput(&b)
	fs.Usage = Usage(fs, "Usage: x\n", "tail\n")
	fs.Usage()
	want := `Usage: x
  --json
    	print JSON
  --n int
    	how many
  --nats-url url
    	NATS server url
  --rules value
    	rule file
  --tenant string
    	the tenant (default "default")
  --timeout duration
    	how long (default 5s)

tail
`
	if b.String() != want {
		t.Fatalf("usage:\n%s\nwant:\n%s", b.String(), want)
	}
}
