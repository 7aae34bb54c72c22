package cliflag_test

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/turnguard/turnguard/internal/cliflag"
)

func TestEnvThenFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantURL string
		wantN   int
		wantErr bool
	}{
		{name: "defaults", wantURL: "", wantN: 1},
		{name: "from the environment", env: map[string]string{"TURNGUARD_NATS_URL": "nats://a:4222", "TURNGUARD_BATCH_SIZE": "7"}, wantURL: "nats://a:4222", wantN: 7},
		{name: "the command line wins", env: map[string]string{"TURNGUARD_NATS_URL": "nats://a:4222"}, args: []string{"--nats-url", "nats://b:4222"}, wantURL: "nats://b:4222", wantN: 1},
		{name: "bad value names the variable", env: map[string]string{"TURNGUARD_BATCH_SIZE": "many"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			url := fs.String("nats-url", "", "")
			n := fs.Int("batch-size", 1, "")
			err := cliflag.ApplyEnv(fs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ApplyEnv: %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if *url != tt.wantURL || *n != tt.wantN {
				t.Fatalf("url %q n %d, want %q %d", *url, *n, tt.wantURL, tt.wantN)
			}
		})
	}
}

func TestList(t *testing.T) {
	var l cliflag.List
	for _, v := range []string{"a.yaml", "b.yaml, c.yaml", " ,"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a.yaml", "b.yaml", "c.yaml"}; !slices.Equal(l, want) {
		t.Fatalf("got %v, want %v", l, want)
	}
	if l.String() != "a.yaml,b.yaml,c.yaml" {
		t.Fatalf("String() = %q", l.String())
	}
}

// A list the environment set is replaced by the command line's, not added
// to (TURNGUARD_RULES=a.yaml processor --rules b.yaml loads b.yaml alone);
// without the flag the environment's stands.
func TestEnvListIsReplacedByFlags(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want []string
	}{
		{"environment only", "a.yaml,b.yaml", nil, []string{"a.yaml", "b.yaml"}},
		{"command line replaces it", "a.yaml", []string{"--rules", "b.yaml"}, []string{"b.yaml"}},
		{"repeated on the command line", "a.yaml", []string{"--rules", "b.yaml", "--rules", "c.yaml"}, []string{"b.yaml", "c.yaml"}},
		{"command line only", "", []string{"--rules", "b.yaml"}, []string{"b.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("TURNGUARD_RULES", tt.env)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var rules cliflag.List
			fs.Var(&rules, "rules", "")
			if err := cliflag.ApplyEnv(fs); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rules, tt.want) {
				t.Fatalf("rules %v, want %v", rules, tt.want)
			}
		})
	}
}

// A command reads some flags from variables of its own names: the renamed
// variable sets the flag, the default name no longer does.
func TestApplyEnvAs(t *testing.T) {
	t.Setenv("TURNGUARD_NATS_CREDS", "processor.creds")
	t.Setenv("TURNGUARD_REPLAY_NATS_CREDS", "admin.creds")
	t.Setenv("TURNGUARD_NATS_URL", "nats://a:4222")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	creds := fs.String("nats-creds", "", "")
	url := fs.String("nats-url", "", "")
	if err := cliflag.ApplyEnvAs(fs, map[string]string{"nats-creds": "TURNGUARD_REPLAY_NATS_CREDS"}); err != nil {
		t.Fatal(err)
	}
	if *creds != "admin.creds" || *url != "nats://a:4222" {
		t.Fatalf("creds %q url %q", *creds, *url)
	}
}
