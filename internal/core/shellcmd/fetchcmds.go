package shellcmd

import (
	"slices"
	"strings"
)

// subcommandFetches are programs that bring in another's text only with
// one of their subcommands or options (any case) — openssl s_client
// prints what a server sends, huggingface-cli download a repository's
// files, certutil -urlcache and bitsadmin /transfer download, notmuch
// show prints a mail — and their other commands do not: Programs names
// such a call "program word" (openssl s_client), for a list of fetches
// to hold.
var subcommandFetches = map[string][]string{
	"openssl":         {"s_client"},
	"huggingface-cli": {"download"},
	"hf":              {"download"},
	"certutil":        {"-urlcache", "/urlcache"},
	"bitsadmin":       {"/transfer"},
	"notmuch":         {"show"},
}

// LWPRequest is the name Programs gives libwww-perl's GET, HEAD and POST,
// which lwp-request installs under those names (upper case: a head is
// head).
const LWPRequest = "lwp-request"

// NPMReadme is the name Programs gives npm view (info, show) asked for a
// package's readme: what its author wrote.
const NPMReadme = "npm view readme"

// subcommandFetch adds the name a call of one of subcommandFetches gets,
// the lwp-request of GET, HEAD and POST, and npm view's readme.
func (c *collector) subcommandFetch(name string, argv []string) {
	base := argv[0][strings.LastIndexAny(argv[0], `/\`)+1:]
	switch base {
	case "GET", "HEAD", "POST":
		c.add(LWPRequest)
	}
	if words, ok := subcommandFetches[name]; ok {
		for _, a := range argv[1:] {
			if slices.Contains(words, strings.ToLower(a)) {
				c.add(name + " " + words[0])
				return
			}
		}
	}
	if name == "npm" && slices.Contains(argv[1:], "readme") &&
		slices.ContainsFunc(argv[1:], func(a string) bool { return a == "view" || a == "info" || a == "show" || a == "v" }) {
		c.add(NPMReadme)
	}
}
