package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

func TestFileNames(t *testing.T) {
	for _, tc := range []struct {
		written, word string
		names         bool
	}{
		{"install.sh", "install.sh", true},
		{"./install.sh", "/home/dev/app/install.sh", true},
		{"~/Downloads/x.sh", "/home/dev/Downloads/x.sh", true},
		{"/tmp/x.sh", "x.sh", true},
		{"/tmp/x.sh", "../tmp/x.sh", true},
		{"install.sh", "reinstall.sh", false},
		{"dir/install.sh", "other/install.sh", false},
		{"a/b.txt", "b.txt", true},
		{"install.sh", "install.shx", false},
		{"/home/dev/Downloads/sample/app.ts", "file:///home/dev/Downloads/sample/app.ts", true},
		{"widget/src/index.ts", "FILE://localhost/home/dev/widget/src/index.ts", true},
		{"C:/src/my app/a.ts", "file:///C:/src/my%20app/a.ts", true},
		{"/home/dev/Downloads/sample/app.ts", "file:///home/dev/Downloads/sample/app.ts#L10", true},
		{"/home/dev/Downloads/sample/app.ts", "file:///home/dev/Downloads/sample/app.ts?line=10", true},
	} {
		w, p := cleanPath(tc.word), cleanPath(tc.written)
		if got := w != "" && p != "" && namesFile(w, p); got != tc.names {
			t.Errorf("%q names %q: %v, want %v", tc.word, tc.written, got, tc.names)
		}
	}
	for _, none := range []string{"", ".", "/", "~", "~/", "./", " "} {
		if p := cleanPath(none); p != "" {
			t.Errorf("cleanPath(%q) = %q, want no file", none, p)
		}
	}
}

// Copies make room for copies: a session full of a fetch's files keeps
// them when later calls copy one of them many times over.
func TestCopiesDoNotPushOutWhatTheyCopy(t *testing.T) {
	var s turnstate.Session
	rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: "/tmp/notes.md", Source: "shell-fetch"}})
	for i := range turnstate.MaxFileTaints - 2 {
		rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: fmt.Sprintf("page%d.html", i), Source: "shell-fetch"}})
	}
	for i := range 3 * turnstate.MaxFileTaints {
		rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: fmt.Sprintf("/tmp/s%d", i), Source: "shell-fetch" + copySuffix}})
	}
	if !slices.ContainsFunc(s.FileTaints, func(f turnstate.FileTaint) bool { return f.Path == "/tmp/notes.md" }) {
		t.Errorf("the fetched file was pushed out by copies: %v", s.FileTaints)
	}
	if len(s.FileTaints) != turnstate.MaxFileTaints {
		t.Errorf("%d files remembered, want %d", len(s.FileTaints), turnstate.MaxFileTaints)
	}
	// A copy written over the fetched file (echo done >> notes.md) keeps
	// it a fetch's, not a copy that copies push out.
	rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: "/tmp/notes.md", Source: "shell-fetch" + copySuffix}})
	for i := range 3 * turnstate.MaxFileTaints {
		rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: fmt.Sprintf("/tmp/t%d", i), Source: "shell-fetch" + copySuffix}})
	}
	if i := slices.IndexFunc(s.FileTaints, func(f turnstate.FileTaint) bool { return f.Path == "/tmp/notes.md" }); i < 0 || copied(s.FileTaints[i]) {
		t.Errorf("the fetched file, written over by a copy, was made a copy or pushed out: %v", s.FileTaints)
	}
}

func TestRememberFiles(t *testing.T) {
	var s turnstate.Session
	for i := range turnstate.MaxFileTaints + 3 {
		rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: fmt.Sprintf("f%d", i), Source: "src"}})
	}
	if len(s.FileTaints) != turnstate.MaxFileTaints || s.FileTaints[0].Path != "f3" {
		t.Fatalf("%d files, first %q: want %d, the 3 oldest forgotten", len(s.FileTaints), s.FileTaints[0].Path, turnstate.MaxFileTaints)
	}
	// Written again, a file is the newest, once.
	rememberFiles(&s, []turnstate.FileTaint{{Label: "l", Path: "f5", Source: "src"}})
	paths := make([]string, 0, len(s.FileTaints))
	for _, f := range s.FileTaints {
		paths = append(paths, f.Path)
	}
	if n := len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "f5" })); n != 1 || paths[len(paths)-1] != "f5" {
		t.Errorf("f5 written again: %q", paths)
	}
}

func TestEachStringOrder(t *testing.T) {
	v := map[string]any{"b": "2", "a": []any{"1", map[string]any{"d": "4", "c": "3"}}, "e": 5}
	var got []string
	for range 20 {
		got = got[:0]
		EachString(v, func(s string) { got = append(got, s) })
		if !slices.Equal(got, []string{"1", "3", "4", "2"}) {
			t.Fatalf("strings %q, want them in the order of their names", got)
		}
	}
}

// namesDir: a word names a cloned directory by its path or a path under
// it, from anywhere or from the directory it is in.
func TestNamesDir(t *testing.T) {
	for _, tc := range []struct {
		w, d string
		want bool
	}{
		{"widget", "widget", true},
		{"widget/README.md", "widget", true},
		{"/home/dev/widget/src/a.js", "widget", true},
		{"/home/dev/widget", "widget", true},
		{"/home/dev/widget/README.md", "/home/dev/widget", true},
		{"widget/README.md", "/home/dev/widget", true},
		{"src/widget/README.md", "src/widget", true},
		{"/home/dev/widgets/README.md", "widget", false},
		{"/home/dev/README.md", "/home/dev/widget", false},
		{"/other/widget/README.md", "/home/dev/widget", false},
		{"mywidget/a", "widget", false},
		// A path from further up than d's parent (~/app/… with ~/ left
		// out), d's last components first.
		{"app/vendor/w/README.md", "/home/dev/app/vendor/w", true},
		{"vendor/w", "/home/dev/app/vendor/w", true},
		{"app/vendor/x/README.md", "/home/dev/app/vendor/w", false},
		{"dev/app/README.md", "/home/dev/app/vendor/w", false},
		{"vendor/widget/x", "other/widget", false},
	} {
		if got := namesDir(tc.w, tc.d); got != tc.want {
			t.Errorf("namesDir(%q, %q) = %v, want %v", tc.w, tc.d, got, tc.want)
		}
	}
}

func TestPathParts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		args    map[string]any
		want    []string
	}{
		{"a Read's path", "", map[string]any{"file_path": "/Users/dev/Downloads/INSTALL.md"}, []string{"Downloads", "INSTALL.md", "Users", "dev"}},
		{"home, dot and dot-dot are no names", "cat ~/./Downloads/../notes/a.txt", nil, []string{"Downloads", "a.txt", "notes"}},
		{"a Windows path", `type C:\Users\dev\Downloads\x.txt`, nil, []string{"C:", "Downloads", "Users", "dev", "x.txt"}},
		{"an option's value", "", map[string]any{"args": []any{"--config=~/Downloads/cfg.yaml"}}, []string{"Downloads", "cfg.yaml"}},
		{"a URL's words are not paths", "curl https://example.com/Downloads/x", nil, []string{}},
		{"words without a separator are not paths", "make Downloads", map[string]any{"q": "Downloads"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = map[string]any{}
			}
			if got := pathParts(&ToolView{RawCommand: tc.command, Args: args}); !slices.Equal(got, tc.want) {
				t.Errorf("pathParts = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBackgroundOutputs(t *testing.T) {
	out := func(v any) map[string]any { return map[string]any{"outputs": []any{map[string]any{"value": v}}} }
	tests := []struct {
		name    string
		payload map[string]any
		want    []string
	}{
		{"Claude Code's result object", out(map[string]any{"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": "bt2kelt7i"}), []string{"bt2kelt7i", "bt2kelt7i.output"}},
		{"the announcement as text", out("Command running in background with ID: bt2kelt7i. Output is being written to: /tmp/claude-1000/-home-dev-app/s/tasks/bt2kelt7i.output"),
			[]string{"bt2kelt7i", "bt2kelt7i.output", "/tmp/claude-1000/-home-dev-app/s/tasks/bt2kelt7i.output"}},
		// What the command printed is the page's, whatever it says.
		{"the announcement in stdout", out(map[string]any{"stdout": "Command running in background with ID: bash_1"}), nil},
		{"a command that ran to its end", out(map[string]any{"stdout": "<html>…</html>", "stderr": ""}), nil},
		{"a page quoting the announcement", out(map[string]any{"stdout": "Note: running in background with ID: go.mod. Output is being written to: src/"}), nil},
		{"a long page starting with it", out("Command running in background with ID: Makefile " + strings.Repeat("x", 3000)), nil},
		{"no outputs", map[string]any{"outputs": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range backgroundOutputs(tt.payload, "untrusted_content", "shell-fetch") {
				if f.Label != "untrusted_content" || f.Source != "shell-fetch:background" || f.Dir {
					t.Errorf("file %+v: want the label and source given, not a directory", f)
				}
				got = append(got, f.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("files %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGlobNamesFile(t *testing.T) {
	for _, tc := range []struct {
		glob, file string
		want       bool
	}{
		{"/tmp/c/tasks/*.output", "/tmp/c/tasks/bt2kelt7i.output", true},
		{"/tmp/c/tasks/*.output", "bt2kelt7i.output", true},
		{"tasks/*.output", "/tmp/c/tasks/bt2kelt7i.output", true},
		{"*.sh", "install.sh", true},
		{"other/*.output", "/tmp/c/tasks/bt2kelt7i.output", false},
		{"*.md", "install.sh", false},
		{"[", "install.sh", false},
	} {
		if got := globNamesFile(tc.glob, tc.file); got != tc.want {
			t.Errorf("globNamesFile(%q, %q) = %v, want %v", tc.glob, tc.file, got, tc.want)
		}
	}
}

// TestBackgroundFilesDoNotEvictFetches: files remembered for background
// tasks make room among themselves, so announcements cannot push out what
// a fetch wrote (review 3, stop 41).
func TestBackgroundFilesDoNotEvictFetches(t *testing.T) {
	sess := turnstate.New("t", "s")
	rememberFiles(sess, []turnstate.FileTaint{{Label: "untrusted_content", Path: "notes.md", Source: "shell-fetch"}})
	for i := range 20 {
		rememberFiles(sess, backgroundOutputs(map[string]any{"outputs": []any{map[string]any{"value": fmt.Sprintf("Command running in background with ID: a%d. Output is being written to: /tmp/b%d", i, i)}}},
			"untrusted_content", "shell-fetch"))
	}
	var background int
	fetched := false
	for _, f := range sess.FileTaints {
		if strings.HasSuffix(f.Source, backgroundSuffix) {
			background++
		}
		fetched = fetched || f.Path == "notes.md"
	}
	if !fetched || background > maxBackgroundFiles {
		t.Errorf("after 20 announcements: the fetch's file kept %v, %d background files (at most %d): %+v", fetched, background, maxBackgroundFiles, sess.FileTaints)
	}
}

// FuzzFileURI: any word is read without panicking, and what a file: URI
// names is an absolute path, or a Windows drive's.
func FuzzFileURI(f *testing.F) {
	for _, s := range []string{"file:///home/dev/a.ts", "file://localhost/x", "FILE:///C:/a%20b", "file://", "file://%", "file:///%4", "https://x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		p, ok := fileURI(w)
		if !ok {
			return
		}
		if !strings.HasPrefix(p, "/") && (len(p) < 2 || p[1] != ':') {
			t.Fatalf("fileURI(%q) = %q: neither an absolute path nor a drive's", w, p)
		}
		_ = cleanPath(w)
	})
}

func TestNestedDestination(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"text", "see https://x.example", false},
		{"Graph's message", map[string]any{"subject": "s", "toRecipients": []any{map[string]any{"emailAddress": map[string]any{"address": "a@x.example"}}}}, true},
		{"a nested blind copy", map[string]any{"bccRecipients": []any{"a@x.example"}, "text": "t"}, true},
		{"Slack text blocks", []any{map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "see <https://x.example>"}}}, false},
		{"Slack image block", []any{map[string]any{"type": "image", "image_url": "https://px.example/t.gif", "alt_text": "x"}}, true},
		{"a text body object", map[string]any{"contentType": "Text", "content": "hi"}, false},
		{"an HTML body object", map[string]any{"contentType": "HTML", "content": "<p>hi</p>"}, true},
		{"SendGrid's content", []any{map[string]any{"type": "text/html", "value": "<img src=x>"}}, true},
		{"a name in one case", map[string]any{"TORECIPIENTS": []any{"a@x.example"}}, true},
		{"attendees", map[string]any{"attendees": []any{map[string]any{"rcpt": "a@x.example"}}}, true},
		{"a reply's options", map[string]any{"auto_reply": false, "priority": "high"}, false},
		{"too deep", deep(maxNestedDepth + 2), true},
	} {
		budget := maxNestedFields
		if got := nestedDestination(tc.v, 0, &budget); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func deep(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"inner": v}
	}
	return v
}

// TestWorkingDir: the working directory a step says is used only when
// absolute and of a path's size; it is cleaned and lower-cased as
// remembered paths are compared.
func TestWorkingDir(t *testing.T) {
	for _, tc := range []struct{ cwd, want string }{
		{"", ""},
		{"src/app", ""},
		{`C:\Users\dev\app`, "/c:/users/dev/app"},
		{"/home/Dev/app/", "/home/dev/app"},
		{"/home/dev/app/../lib", "/home/dev/lib"},
		{" /srv ", "/srv"},
		{"/" + strings.Repeat("a", maxCwdBytes), ""},
	} {
		req := &acs.Request{}
		req.Params.Metadata.Cwd = tc.cwd
		if got := workingDir(req); got != tc.want {
			t.Errorf("workingDir(%.40q) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
	if got := workingDir(nil); got != "" {
		t.Errorf("workingDir(nil) = %q", got)
	}
}
