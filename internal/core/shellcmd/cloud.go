package shellcmd

import (
	"path"
	"slices"
	"strings"
)

// BucketRead is the name Programs gives a cloud storage client that prints
// or copies an object out of a bucket — aws s3 cp s3://… -, aws s3api
// get-object, gsutil cat gs://…, gcloud storage cp, s3cmd get, rclone
// copy remote:…, azcopy copy https://…, az storage blob download: what
// whoever can write the bucket put there (a customer's upload, a shared
// or public dataset) enters the session as a fetched page does. An
// upload, a listing or a copy between buckets is not one: no object's
// content reaches the output or a local file.
const BucketRead = "bucket read"

// storageClients are the programs bucketRead reads.
var storageClients = map[string]bool{"aws": true, "gsutil": true, "gcloud": true, "s3cmd": true, "rclone": true,
	"azcopy": true, "az": true}

// storageValueOptions are the clients' options, global and of their copy
// commands, that take the next word as their value. One missing only
// makes its value an operand, which at worst takes an upload for a
// download (a label too many, never one too few).
var storageValueOptions = map[string]bool{
	"--profile": true, "--region": true, "--endpoint-url": true, "--output": true, "--query": true,
	"--ca-bundle": true, "--color": true, "--cli-read-timeout": true, "--cli-connect-timeout": true,
	"--exclude": true, "--include": true, "--acl": true, "--storage-class": true, "--content-type": true,
	"--cache-control": true, "--metadata": true, "--sse": true, "--sse-kms-key-id": true, "--expected-size": true,
	"--page-size": true, "--source-region": true, "--request-payer": true, "--bucket": true, "--key": true,
	"--range": true, "--version-id": true, "--project": true, "--configuration": true, "--account": true,
	"--config": true, "--log-level": true, "--log-file": true, "--transfers": true, "--checkers": true,
	"--filter": true, "--filter-from": true, "--container-name": true, "--container": true, "-c": true,
	"--name": true, "-n": true, "--account-name": true, "--account-key": true, "--sas-token": true,
	"--connection-string": true, "--share-name": true, "-s": true, "--path": true, "-p": true, "--subscription": true,
	"--pattern": true, "--auth-mode": true, "-o": true, "-h": true, "-u": true,
}

// storageURL reports whether a word names an object elsewhere: a bucket's
// URL (s3://, gs://, Azure's abfs:// and wasb://) or a web URL (azcopy's
// and rclone copyurl's sources).
func storageURL(a string) bool {
	l := strings.ToLower(a)
	for _, p := range []string{"s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://", "wasb://", "wasbs://", "http://", "https://"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// rcloneRemote reports whether a word is rclone's remote:path (a
// configured remote's name, or an on-the-fly :backend:), not a local
// path: C:\… and ./a:b are local.
func rcloneRemote(a string) bool {
	if storageURL(a) {
		return true
	}
	i := strings.IndexByte(a, ':')
	if i < 0 {
		return false
	}
	if i == 0 {
		return strings.Count(a, ":") >= 2 // :s3:bucket/key
	}
	name := a[:i]
	return len(name) >= 2 && !strings.ContainsAny(name, `/\ `) && !strings.HasPrefix(name, ".")
}

// storageOperands are the words of args past storage options and their
// values.
func storageOperands(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case storageValueOptions[a] && i+1 < len(args) && !rcloneRemote(args[i+1]):
			// Never a remote word: an option taken for one that takes a
			// value must not hide the object read.
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

// bucketRead reports whether argv (a storage client's, from its name on)
// prints or copies an object out of a bucket, and the local files it
// writes: the destination and, as it may be a directory, the name each
// object gets in it; a directory a sync or a batch download fills, with
// a trailing slash (DirWritten).
func bucketRead(argv []string) (bool, []string) {
	if len(argv) == 0 || !storageClients[ProgramName(argv[0])] {
		return false, nil
	}
	ops := storageOperands(argv[1:])
	verb := func(words ...string) (string, []string) {
		// The first of words among the operands, and the operands after it.
		for i, o := range ops {
			for _, w := range words {
				if o == w {
					return w, ops[i+1:]
				}
			}
		}
		return "", nil
	}
	switch ProgramName(argv[0]) {
	case "aws":
		if i := index(ops, "s3api"); i >= 0 && i+1 < len(ops) && ops[i+1] == "get-object" {
			if rest := ops[i+2:]; len(rest) > 0 {
				return true, []string{rest[len(rest)-1]}
			}
			return true, nil
		}
		if _, rest := verb("s3"); len(rest) > 0 {
			return copyOut(rest[0], rest[1:], storageURL)
		}
	case "gcloud":
		if _, rest := verb("storage"); len(rest) > 0 {
			return copyOut(rest[0], rest[1:], storageURL)
		}
	case "gsutil":
		if v, rest := verb("cat", "cp", "mv", "rsync"); v != "" {
			return copyOut(v, rest, storageURL)
		}
	case "s3cmd":
		switch v, rest := verb("get", "cp", "mv", "sync"); v {
		case "get":
			switch {
			case len(rest) > 1:
				return true, []string{rest[len(rest)-1]}
			case len(rest) == 1:
				return true, []string{path.Base(rest[0])}
			}
			return true, nil
		case "":
		default:
			return copyOut(v, rest, storageURL)
		}
	case "rclone":
		if v, rest := verb("cat", "copy", "copyto", "move", "moveto", "copyurl", "sync", "bisync"); v != "" {
			return copyOut(v, rest, rcloneRemote)
		}
	case "azcopy":
		if v, rest := verb("copy", "cp", "sync"); v != "" {
			return copyOut(v, rest, storageURL)
		}
	case "az":
		if index(ops, "storage") >= 0 && (index(ops, "download") >= 0 || index(ops, "download-batch") >= 0) {
			return true, azDestinations(argv[1:])
		}
	}
	return false, nil
}

// bucketReadAny is bucketRead of a command some of whose words are not
// literal (known[i] false): each such word may be a bucket's object or a
// local file, so both readings count, and the one where only the last
// word is local.
func bucketReadAny(argv []string, known []bool) bool {
	if !slices.Contains(known, false) {
		ok, _ := bucketRead(argv)
		return ok
	}
	for _, local := range []func(i int) bool{
		func(int) bool { return false },
		func(int) bool { return true },
		func(i int) bool { return i == len(argv)-1 },
	} {
		words := slices.Clone(argv)
		for i := range words {
			if !known[i] {
				words[i] = "s3://?"
				if local(i) {
					words[i] = "?"
				}
			}
		}
		if ok, _ := bucketRead(words); ok {
			return true
		}
	}
	return false
}

// copyOut reads a copying command: cat of a remote object prints it; cp,
// mv, sync … from a remote source to a local destination write it.
func copyOut(cmd string, ops []string, remote func(string) bool) (bool, []string) {
	switch cmd {
	case "cat":
		for _, o := range ops {
			if remote(o) {
				return true, nil
			}
		}
		return false, nil
	case "cp", "mv", "copy", "copyto", "move", "moveto", "copyurl":
	case "sync", "rsync", "bisync":
		if len(ops) < 2 || !anyOf(ops[:len(ops)-1], remote) {
			return false, nil
		}
		if dest := ops[len(ops)-1]; !remote(dest) && dest != "-" {
			return true, []string{strings.TrimRight(dest, "/") + "/"}
		}
		return true, nil
	default:
		return false, nil
	}
	if len(ops) < 2 || !anyOf(ops[:len(ops)-1], remote) {
		return false, nil
	}
	dest := ops[len(ops)-1]
	if remote(dest) || dest == "-" {
		// Another bucket (nothing reaches the session), or the standard
		// output (the object is the output).
		return dest == "-", nil
	}
	files := []string{dest}
	for _, src := range ops[:len(ops)-1] {
		if b := path.Base(strings.TrimRight(src[strings.Index(src, ":")+1:], "/")); remote(src) && b != "" && b != "." && b != "/" {
			files = append(files, strings.TrimRight(dest, "/")+"/"+b)
		}
	}
	return true, files
}

// azDestinations are the files az storage … download writes: --file
// (-f), or the directory --destination (-d) of a batch.
func azDestinations(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--file", "-f":
			out = append(out, args[i+1])
		case "--destination", "-d", "--dest":
			out = append(out, strings.TrimRight(args[i+1], "/")+"/")
		}
	}
	return out
}

func index(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

func anyOf(words []string, f func(string) bool) bool {
	for _, w := range words {
		if f(w) {
			return true
		}
	}
	return false
}
