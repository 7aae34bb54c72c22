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

// logClients are the programs serviceLogs reads.
var logClients = map[string]bool{"heroku": true, "fly": true, "flyctl": true, "vercel": true, "railway": true,
	"netlify": true, "aws": true, "gcloud": true, "az": true}

// serviceLogs reports whether a call prints a hosted service's logs —
// heroku logs, aws logs tail (get-log-events, filter-log-events,
// get-query-results, start-live-tail), gcloud logging read (and tail,
// gcloud app|functions|run … logs read|tail), az webapp log tail (az
// containerapp logs show, az container logs, az monitor log-analytics
// query), fly logs, vercel logs, railway logs, netlify logs — which, as
// kubectl logs does, prints what the service's callers sent it (a
// request's path, a header, a form's field): Programs names it PodLogs.
// A machine's own journal (journalctl) is not one.
func serviceLogs(name string, argv []string) bool {
	if !logClients[name] {
		return false
	}
	ops := storageOperands(argv[1:])
	pair := func(first, second []string) bool {
		for i := 0; i+1 < len(ops); i++ {
			if slices.Contains(first, ops[i]) && slices.Contains(second, ops[i+1]) {
				return true
			}
		}
		return false
	}
	switch name {
	case "heroku", "fly", "flyctl", "vercel", "railway":
		return len(ops) > 0 && ops[0] == "logs"
	case "netlify":
		return len(ops) > 0 && (ops[0] == "logs" || strings.HasPrefix(ops[0], "logs:"))
	case "aws":
		return len(ops) > 1 && ops[0] == "logs" &&
			slices.Contains([]string{"tail", "get-log-events", "filter-log-events", "get-query-results", "start-live-tail"}, ops[1])
	case "gcloud":
		return pair([]string{"logging", "logs"}, []string{"read", "tail"})
	case "az":
		return pair([]string{"log", "logs"}, []string{"tail", "show"}) || pair([]string{"container"}, []string{"logs"}) ||
			pair([]string{"log-analytics"}, []string{"query"})
	}
	return false
}
