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

// storageClients are the programs bucketRead reads: the clouds' own
// clients, the multi-cloud ones (rclone, s5cmd, MinIO's mc, Backblaze's
// b2, Oracle's oci), and the file systems that mount a bucket.
var storageClients = map[string]bool{"aws": true, "gsutil": true, "gcloud": true, "s3cmd": true, "rclone": true,
	"azcopy": true, "az": true, "s5cmd": true, "mc": true, "b2": true, "oci": true,
	"gcsfuse": true, "s3fs": true, "mount-s3": true, "goofys": true, "blobfuse2": true}

// bucketCmdlets are PowerShell's cmdlets that read an object out of a
// bucket: AWS Tools' Read-S3Object (and Copy-S3Object -LocalFile), Google
// Cloud's Read-GcsObject, Az.Storage's Get-AzStorage…Content.
var bucketCmdlets = map[string]bool{"read-s3object": true, "copy-s3object": true, "read-gcsobject": true,
	"get-azstorageblobcontent": true, "get-azstoragefilecontent": true, "get-azdatalakegen2itemcontent": true}

// cmdletReads reports whether a bucket cmdlet's call reads an object out:
// Copy-S3Object does only with -LocalFile or -LocalFolder (otherwise it
// copies between buckets).
func cmdletReads(argv []string) bool {
	if ProgramName(argv[0]) != "copy-s3object" {
		return true
	}
	return slices.ContainsFunc(argv[1:], func(a string) bool {
		return strings.EqualFold(a, "-LocalFile") || strings.EqualFold(a, "-LocalFolder")
	})
}

// cliImages are the container images of the storage clients, by the last
// part of their name, and the program each runs ("" when the image's
// arguments name it: google/cloud-sdk gsutil …).
var cliImages = map[string]string{"aws-cli": "aws", "cloud-sdk": "", "google-cloud-cli": "", "azure-cli": "az",
	"rclone": "rclone", "mc": "mc", "s5cmd": "s5cmd"}

// containerCLI is what a docker or podman run of a storage client's image
// runs — the client and its arguments — or false: the image's name is
// the first word after run that names one (options' values never do).
func containerCLI(argv []string) ([]string, bool) {
	if len(argv) < 3 || (ProgramName(argv[0]) != "docker" && ProgramName(argv[0]) != "podman") {
		return nil, false
	}
	run := slices.Index(argv, "run")
	if run < 0 {
		return nil, false
	}
	for i := run + 1; i < len(argv); i++ {
		image := argv[i]
		if strings.HasPrefix(image, "-") {
			continue
		}
		base := image[strings.LastIndexByte(image, '/')+1:]
		if j := strings.IndexAny(base, ":@"); j >= 0 {
			base = base[:j]
		}
		prog, ok := cliImages[base]
		if !ok {
			continue
		}
		if e := optionValue(argv[run+1:i], "--entrypoint", "--entrypoint"); e != "" {
			prog = e // --entrypoint gsutil: that program runs the arguments
		}
		if prog == "" {
			return argv[i+1:], i+1 < len(argv)
		}
		return append([]string{prog}, argv[i+1:]...), true
	}
	return nil, false
}

// storageValueOptions are the clients' long options, global and of their
// copy commands, that take the next word as their value. One missing only
// makes its value an operand, which at worst takes an upload for a
// download (a label too many); short options are left out, since the
// same letter takes a value for one client and none for another (rclone's
// -c), and swallowing a destination would hide a download.
var storageValueOptions = map[string]bool{
	"--profile": true, "--region": true, "--endpoint-url": true, "--output": true, "--query": true,
	"--ca-bundle": true, "--color": true, "--cli-read-timeout": true, "--cli-connect-timeout": true,
	"--cli-binary-format": true, "--exclude": true, "--include": true, "--acl": true, "--storage-class": true,
	"--content-type": true, "--cache-control": true, "--content-disposition": true, "--content-encoding": true,
	"--content-language": true, "--expires": true, "--grants": true, "--website-redirect": true,
	"--metadata": true, "--metadata-directive": true, "--sse": true, "--sse-c": true, "--sse-c-key": true,
	"--sse-kms-key-id": true, "--copy-props": true, "--checksum-algorithm": true, "--tagging": true,
	"--expected-size": true, "--page-size": true, "--source-region": true, "--request-payer": true,
	"--bucket": true, "--key": true, "--range": true, "--version-id": true, "--expression": true,
	"--expression-type": true, "--input-serialization": true, "--output-serialization": true,
	"--project": true, "--configuration": true, "--account": true, "--verbosity": true, "--format": true,
	"--config": true, "--log-level": true, "--log-file": true, "--transfers": true, "--checkers": true,
	"--filter": true, "--filter-from": true, "--files-from": true, "--container-name": true, "--container": true,
	"--name": true, "--account-name": true, "--account-key": true, "--sas-token": true,
	"--connection-string": true, "--share-name": true, "--path": true, "--subscription": true,
	"--pattern": true, "--auth-mode": true, "--from-to": true, "--source": true, "--destination": true,
	"--bucket-name": true, "--namespace": true, "--file": true, "--download-dir": true, "--dest-dir": true,
	"--endpoint": true, "--max-age": true, "--min-age": true, "--max-size": true, "--min-size": true,
	"--bwlimit": true, "--include-from": true, "--exclude-from": true, "--order-by": true, "--backup-dir": true,
	"--suffix": true, "--max-transfer": true, "--query-expression": true, "--prefix": true, "--entrypoint": true,
}

// storageURL reports whether a word names an object elsewhere: a bucket's
// URL (s3://, gs://, Azure's abfs:// and wasb://, b2://) or a web URL
// (azcopy's and rclone copyurl's sources).
func storageURL(a string) bool {
	l := strings.ToLower(a)
	for _, p := range []string{"s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://", "wasb://", "wasbs://", "b2://", "oci://", "http://", "https://"} {
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

// mcRemote is MinIO's alias/bucket/key: a word with a '/' that does not
// begin as a local path does (/, ./, ../, ~). A relative dir/file reads
// as remote too (fail closed: its copy is taken for a download).
func mcRemote(w string) bool {
	return strings.Contains(w, "/") && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "./") &&
		!strings.HasPrefix(w, "../") && !strings.HasPrefix(w, "~")
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
		case storageValueOptions[a] && i+1 < len(args):
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
// object gets in it; a directory a recursive copy, a sync, a batch
// download or a mount fills, with a trailing slash (DirWritten).
func bucketRead(argv []string) (bool, []string) {
	if len(argv) == 0 || !storageClients[ProgramName(argv[0])] {
		return false, nil
	}
	ops := storageOperands(argv[1:])
	// after is the operands past the first of words, and which it was.
	after := func(from []string, words ...string) (string, []string) {
		for i, o := range from {
			if slices.Contains(words, o) {
				return o, from[i+1:]
			}
		}
		return "", nil
	}
	recursive := slices.ContainsFunc(argv[1:], func(a string) bool {
		return a == "--recursive" || a == "-r" || a == "-R" || shortCluster(a) && strings.ContainsAny(a[1:], "rR") && !strings.HasPrefix(a, "--")
	})
	switch name := ProgramName(argv[0]); name {
	case "aws":
		if _, rest := after(ops, "s3api"); rest != nil {
			// get-object OUTFILE, select-object-content … OUTFILE.
			if v, rest := after(rest, "get-object", "select-object-content", "get-object-torrent"); v != "" {
				if len(rest) > 0 {
					return true, []string{rest[len(rest)-1]}
				}
				return true, nil
			}
			return false, nil
		}
		if _, rest := after(ops, "s3"); rest != nil {
			if v, rest := after(rest, "cp", "mv", "sync"); v != "" {
				return copyOut(v, rest, storageURL, recursive)
			}
		}
	case "gcloud":
		if _, rest := after(ops, "storage"); rest != nil {
			if v, rest := after(rest, "cat", "cp", "mv", "rsync"); v != "" {
				return copyOut(v, rest, storageURL, recursive)
			}
		}
	case "gsutil":
		if v, rest := after(ops, "cat", "cp", "mv", "rsync"); v != "" {
			if v == "cp" && slices.Contains(argv[1:], "-I") && len(rest) == 1 && !storageURL(rest[0]) {
				// cp -I DEST: the sources are read from standard input.
				return true, []string{strings.TrimRight(rest[0], "/") + "/"}
			}
			return copyOut(v, rest, storageURL, recursive)
		}
	case "s3cmd":
		switch v, rest := after(ops, "get", "cp", "mv", "sync"); v {
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
			return copyOut(v, rest, storageURL, recursive)
		}
	case "s5cmd":
		if v, _ := after(ops, "run"); v != "" {
			return true, nil // commands read from a file or standard input (fail closed)
		}
		if v, rest := after(ops, "cat", "cp", "mv", "sync"); v != "" {
			return copyOut(v, rest, storageURL, recursive)
		}
	case "rclone":
		if v, rest := after(ops, "mount", "nfsmount"); v != "" {
			if len(rest) >= 2 {
				return true, []string{strings.TrimRight(rest[len(rest)-1], "/") + "/"}
			}
			return true, nil
		}
		if v, rest := after(ops, "cat", "copy", "copyto", "move", "moveto", "copyurl", "sync", "bisync"); v != "" {
			// copy, move and sync copy a directory's contents.
			return copyOut(v, rest, rcloneRemote, recursive || v == "copy" || v == "move")
		}
	case "mc":
		if v, rest := after(ops, "cat", "head", "cp", "mirror", "get", "mv"); v != "" {
			if v != "cat" && v != "head" && len(rest) >= 2 && mcRemote(rest[len(rest)-1]) &&
				slices.ContainsFunc(rest[:len(rest)-1], mcRemote) {
				// Both sides read as remote: the destination may be a
				// relative directory of the user's (fail closed).
				return true, []string{strings.TrimRight(rest[len(rest)-1], "/") + "/"}
			}
			return copyOut(v, rest, mcRemote, recursive || v == "mirror")
		}
	case "azcopy":
		if v, rest := after(ops, "copy", "cp", "sync"); v != "" {
			if len(rest) == 1 && storageURL(rest[0]) {
				return true, nil // --from-to BlobPipe: to standard output
			}
			return copyOut(v, rest, storageURL, recursive)
		}
	case "az":
		if !slices.Contains(ops, "storage") {
			return false, nil
		}
		if slices.Contains(ops, "download") || slices.Contains(ops, "download-batch") || slices.Contains(ops, "query") {
			return true, azDestinations(argv[1:])
		}
		if slices.Contains(ops, "copy") {
			// az storage copy -s SOURCE -d DESTINATION.
			src, dst := optionValue(argv[1:], "-s", "--source"), optionValue(argv[1:], "-d", "--destination")
			if storageURL(src) && dst != "" && !storageURL(dst) {
				return true, []string{dst}
			}
		}
	case "b2":
		if v, rest := after(ops, "sync"); v != "" {
			return copyOut(v, rest, storageURL, true)
		}
		if v, rest := after(ops, "download", "download-file-by-name", "download-file-by-id", "download-file", "cat"); v != "" {
			if v != "cat" && len(rest) >= 2 {
				return true, []string{rest[len(rest)-1]}
			}
			return true, nil
		}
	case "oci":
		if slices.Contains(ops, "os") && slices.Contains(ops, "object") && (slices.Contains(ops, "get") ||
			slices.Contains(ops, "bulk-download") || slices.Contains(ops, "sync")) {
			var files []string
			if f := optionValue(argv[1:], "--file", "--file"); f != "" {
				files = append(files, f)
			}
			for _, o := range []string{"--download-dir", "--dest-dir"} {
				if d := optionValue(argv[1:], o, o); d != "" {
					files = append(files, strings.TrimRight(d, "/")+"/")
				}
			}
			return true, files
		}
	default:
		// A bucket mounted as a file system: BUCKET MOUNTPOINT, past the
		// values of its -o options (passwd_file=…).
		var mount []string
		for _, o := range ops {
			if !strings.Contains(o, "=") {
				mount = append(mount, o)
			}
		}
		if len(mount) >= 2 {
			return true, []string{strings.TrimRight(mount[len(mount)-1], "/") + "/"}
		}
		return true, nil
	}
	return false, nil
}

// awscliAt is where the arguments of the aws an interpreter runs begin
// (python3 -m awscli s3 cp …: after awscli), or -1.
func awscliAt(argv []string) int {
	for i := 1; i < len(argv); i++ {
		if argv[i] == "awscli" && argv[i-1] == "-m" {
			return i + 1
		}
	}
	return -1
}

// optionValue is the value of the first of a short and a long option
// (-s X, --source X, --source=X), "" when there is none.
func optionValue(args []string, short, long string) string {
	for i, a := range args {
		switch {
		case (a == short || a == long) && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, long+"="):
			return a[len(long)+1:]
		}
	}
	return ""
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
// mv, sync … from a remote source to a local destination write it — a
// directory when the copy is recursive.
func copyOut(cmd string, ops []string, remote func(string) bool, recursive bool) (bool, []string) {
	switch cmd {
	case "cat", "head":
		for _, o := range ops {
			if remote(o) {
				return true, nil
			}
		}
		return false, nil
	case "cp", "mv", "copy", "copyto", "move", "moveto", "copyurl", "get":
	case "sync", "rsync", "bisync", "mirror":
		if len(ops) < 2 || !slices.ContainsFunc(ops[:len(ops)-1], remote) {
			return false, nil
		}
		if dest := ops[len(ops)-1]; !remote(dest) && dest != "-" {
			return true, []string{strings.TrimRight(dest, "/") + "/"}
		}
		return true, nil
	default:
		return false, nil
	}
	if len(ops) < 2 || !slices.ContainsFunc(ops[:len(ops)-1], remote) {
		return false, nil
	}
	dest := ops[len(ops)-1]
	if remote(dest) || dest == "-" {
		// Another bucket (nothing reaches the session), or the standard
		// output (the object is the output).
		return dest == "-", nil
	}
	if recursive {
		return true, []string{strings.TrimRight(dest, "/") + "/"}
	}
	files := []string{dest}
	for _, src := range ops[:len(ops)-1] {
		name := src[strings.Index(src, ":")+1:]
		if i := strings.IndexAny(name, "?#"); i >= 0 {
			name = name[:i] // a SAS token, a signed URL's query
		}
		if b := path.Base(strings.TrimRight(name, "/")); remote(src) && b != "" && b != "." && b != "/" {
			files = append(files, strings.TrimRight(dest, "/")+"/"+b)
		}
	}
	return true, files
}

// azDestinations are the files az storage … download writes: --file
// (-f), or the directory --destination (-d) of a batch.
func azDestinations(args []string) []string {
	var out []string
	for i, a := range args {
		name, value, eq := strings.Cut(a, "=")
		if !eq {
			if i+1 >= len(args) {
				break
			}
			value = args[i+1]
		}
		switch name {
		case "--file", "-f":
			out = append(out, value)
		case "--destination", "-d", "--dest":
			out = append(out, strings.TrimRight(value, "/")+"/")
		}
	}
	return out
}
