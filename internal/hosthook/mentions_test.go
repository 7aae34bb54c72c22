package hosthook

import (
	"fmt"
	"strings"
	"testing"
)

// mentionsNote is how a prompt's mentions map: each part's value, and
// whether it is labelled the user's own.
func mentionsNote(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		m := p.(map[string]any)
		_, labelled := m["provenance"]
		fmt.Fprintf(&b, "%s user=%t;", m["value"], labelled)
	}
	return b.String()
}

func TestClaudeMentions(t *testing.T) {
	for _, tc := range []struct {
		name, prompt, cwd, want string
	}{
		{"no mention", "fix the failing test", "/home/dev/app", ""},
		{"a project file", "explain @src/auth.js please", "/home/dev/app", "/home/dev/app/src/auth.js user=true;"},
		{"at the start, trailing punctuation", "@README.md.", "/home/dev/app", "/home/dev/app/README.md user=true;"},
		{"absolute, inside", "see @/home/dev/app/go.mod", "/home/dev/app", "/home/dev/app/go.mod user=true;"},
		{"absolute, outside", "follow @/home/dev/Downloads/INSTALL.md", "/home/dev/app", "/home/dev/Downloads/INSTALL.md user=false;"},
		{"up and out of the project", "read @../Downloads/x.txt", "/home/dev/app", "/home/dev/Downloads/x.txt user=false;"},
		{"through home", "summarise @~/Downloads/report.md", "/home/dev/app", "~/Downloads/report.md user=false;"},
		{"quoted, with spaces", `compare @"docs/my notes.md" and @"/tmp/their notes.md"`, "/home/dev/app",
			"/home/dev/app/docs/my notes.md user=true;/tmp/their notes.md user=false;"},
		{"an MCP resource", "triage @github:repos/acme/app/issues/7", "/home/dev/app", "github:repos/acme/app/issues/7 user=false;"},
		{"an address is no mention", "mail dev@example.com and a@b", "/home/dev/app", ""},
		{"a lone @", "@ and @@", "/home/dev/app", "/home/dev/app/@ user=true;"},
		{"windows", `open @src\main.go and @C:\Users\dev\Downloads\x.txt`, `C:\Users\dev\app`,
			"C:/Users/dev/app/src/main.go user=true;C:/Users/dev/Downloads/x.txt user=false;"},
		{"no cwd", "look at @main.go", "", "main.go user=false;"},
		{"an unclosed quote", `see @"docs/x.md`, "/home/dev/app", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mentionsNote(claudeMentions(tc.prompt, tc.cwd, ids())); got != tc.want {
				t.Errorf("mentions of %q in %q:\n got %s\nwant %s", tc.prompt, tc.cwd, got, tc.want)
			}
		})
	}
}

// A prompt naming more files than a plan lists ends its parts with an
// unlabelled stand-in for the rest (fail closed).
func TestClaudeMentionsBounded(t *testing.T) {
	prompt := strings.Repeat("@a.go ", maxAttachments+3)
	parts := claudeMentions(prompt, "/home/dev/app", ids())
	if len(parts) != maxAttachments {
		t.Fatalf("%d parts, want %d", len(parts), maxAttachments)
	}
	if last := parts[len(parts)-1].(map[string]any); last["provenance"] != nil || last["value"] != "(more mentions)" {
		t.Errorf("last part %v, want the unlabelled stand-in", last)
	}
}

// Mentions are read from whatever a prompt says: no input panics, and
// every part is a file whose value is at most maxAttachmentBytes.
func FuzzClaudeMentions(f *testing.F) {
	for _, s := range []string{"@src/a.go", `@"x y"`, "@~/Downloads/a", "@gh:issue/1", `@C:\x`, "a@b @", "@\"", "@../../x"} {
		f.Add(s, "/home/dev/app")
	}
	f.Fuzz(func(t *testing.T, prompt, cwd string) {
		for _, p := range claudeMentions(prompt, cwd, ids()) {
			m := p.(map[string]any)
			v, _ := m["value"].(string)
			if m["type"] != "file" || v == "" || len(v) > maxAttachmentBytes+len(cwd)+1 {
				t.Fatalf("part %v of %q", m, prompt)
			}
		}
	})
}
