package shellcmd

import (
	"slices"
	"testing"
)

// TestFetchWrites: what a fetch writes under names the line does not
// spell — a mirror's tree, URLs read from a list, a release's assets,
// another version control system's clone, a package or a model — and
// an output named through an expansion; and the commands of the same
// programs that write nothing.
func TestFetchWrites(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
	}{
		// wget's mirror: a directory per host, under -P.
		{"wget -r", "wget -r -np https://x.example/docs/", []string{"x.example/"}},
		{"wget --recursive, the host lower-cased, its port the scheme's", "wget --recursive https://X.example:443/docs/", []string{"x.example/"}},
		{"wget -m under -P", "wget -m -P /tmp/mirror https://x.example/docs/", []string{"/tmp/mirror/x.example/"}},
		{"wget --mirror under --directory-prefix=", "wget --mirror --directory-prefix=site https://x.example/", []string{"site/x.example/"}},
		{"wget -r of another port", "wget -r http://x.example:8080/a/", []string{"x.example:8080/"}},
		{"wget -x", "wget -x https://x.example/a/b.html", []string{"x.example/"}},
		{"wget -rnH: the prefix: among the user's files, not remembered", "wget -rnH https://x.example/docs/", []string{}},
		{"wget -r -nd -P", "wget -r -nd -P dl https://x.example/docs/", []string{"dl/"}},
		{"wget --no-host-directories", "wget -r --no-host-directories --directory-prefix site https://x.example/docs/", []string{"site/"}},
		{"wget -r -H spans hosts: among the user's files, not remembered", "wget -r -H https://x.example/docs/", []string{}},
		{"wget -r -P of an expansion: its literal directory", `wget -r -P "/tmp/$D" https://x.example/`, []string{"/tmp/"}},
		{"wget of a URL named after a downloader", "wget https://x.example/bin/curl", []string{"curl"}},
		// A list of URLs, URLs fed by xargs, a URL in a variable: the
		// directory they save into.
		{"wget -i: among the user's files, not remembered", "wget -i urls.txt", []string{}},
		{"wget -qi -P", "wget -qi urls.txt -P dl", []string{"dl/"}},
		{"wget --input-file=", "wget --input-file=urls.txt --directory-prefix /tmp/dl", []string{"/tmp/dl/"}},
		{"aria2c -i: among the user's files, not remembered", "aria2c -i list", []string{}},
		{"aria2c -d -i", "aria2c -d /tmp/dl -i list", []string{"/tmp/dl/"}},
		{"aria2c --dir= --input-file=", "aria2c --dir=/tmp/dl --input-file=list", []string{"/tmp/dl/"}},
		{"aria2c of a torrent: among the user's files, not remembered", "aria2c x.torrent", []string{}},
		{"curl -K: among the user's files, not remembered", "curl -K cfg", []string{}},
		{"curl --config --output-dir", "curl --config cfg --output-dir out", []string{"out/"}},
		{"xargs curl -O: among the user's files, not remembered", "xargs -n1 curl -O < urls.txt", []string{}},
		{"xargs wget: among the user's files, not remembered", "cat urls.txt | xargs -n1 wget -q", []string{}},
		{"parallel wget -P", "parallel -j4 wget -P dl :::: urls.txt", []string{"dl/"}},
		{"wget of a variable: among the user's files, not remembered", `wget "$URL"`, []string{}},
		{"wget -P of a variable", `wget -P /tmp/dl "$URL"`, []string{"/tmp/dl/"}},
		{"curl -O of a variable, --output-dir=", `curl -O --output-dir=/tmp/dl "$URL"`, []string{"/tmp/dl/"}},
		// The server names the file.
		{"curl -LOJ", "curl -LOJ https://x.example/dl?id=3", []string{"dl"}},
		{"curl -OL: O in a cluster", "curl -OL https://x.example/a.sh", []string{"a.sh"}},
		{"wget --content-disposition", "wget --content-disposition https://x.example/dl?id=3", []string{"dl"}},
		{"PowerShell's curl -OutFile names its file, as before", "curl https://x.example/a.zip -OutFile a.zip", []string{"a.zip"}},
		{"wget -o is the log, not the page", "wget -o log.txt https://x.example/a.sh", []string{"a.sh", "log.txt"}},
		// An output named through an expansion: its literal directory.
		{"curl -o /tmp/$(date)", "curl -o /tmp/$(date +%s).sh https://x.example/a", []string{"/tmp/"}},
		{"curl -o with literal text, no directory: among the user's files, not remembered", "curl -o page-$i.html https://x.example/a", []string{}},
		{"curl --output= attached", "curl --output=/tmp/dl/$(date).sh https://x.example/a", []string{"/tmp/dl/"}},
		{"curl -o attached", "curl -o/tmp/dl/$N.sh https://x.example/a", []string{"/tmp/dl/"}},
		{"wget -O of an expansion", `wget -qO "dl/$NAME" https://x.example/a`, []string{"dl/"}},
		{"a redirect to an expansion", "curl https://x.example/a > /tmp/page-$(date +%s).html", []string{"/tmp/"}},
		// gh's downloads.
		{"gh release download: among the user's files, not remembered", "gh release download v1.2.0 -R someone/tool", []string{}},
		{"gh release download -D", "gh release download v1.2.0 -D dist -p '*.tar.gz'", []string{"dist/"}},
		{"gh release download --dir=", "gh release download --pattern '*.deb' --dir=/tmp/rel", []string{"/tmp/rel/"}},
		{"gh release download -O names its file, as before", "gh release download v1 -O notes.txt", []string{"notes.txt"}},
		{"gh run download: among the user's files, not remembered", "gh run download 123", []string{}},
		{"gh run download of one artifact", "gh run download 123 -n logs -D art", []string{"art/"}},
		{"gh run download of artifacts", "gh run download 123 -n logs -n report -D art", []string{"art/logs/", "art/report/"}},
		{"gh gist clone", "gh gist clone 5b0e0062eb8e9654adad7bb1d81cc75f", []string{"5b0e0062eb8e9654adad7bb1d81cc75f/"}},
		{"gh gist clone of a URL into a directory", "gh gist clone https://gist.github.com/someone/5b0e0062 g", []string{"g/"}},
		// Other version control systems' clones.
		{"hg clone", "hg clone https://hg.example/r", []string{"r/"}},
		{"hg clone of a branch into a directory", "hg clone https://hg.example/r#stable r2", []string{"r2/"}},
		{"hg clone past hg's options", "hg --config ui.x=y clone -r 3 ssh://hg@hg.example/repo/", []string{"repo/"}},
		{"svn checkout", "svn checkout https://svn.example/repos/proj/trunk", []string{"trunk/"}},
		{"svn co of a peg revision into a path", "svn co https://svn.example/p/trunk@123 work", []string{"work/"}},
		{"svn co of two URLs into a path", "svn co https://svn.example/a https://svn.example/b dest", []string{"dest/a/", "dest/b/"}},
		{"svn co of two URLs", "svn co https://svn.example/a https://svn.example/b", []string{"a/", "b/"}},
		{"svn export of a file", "svn export -r 5 https://svn.example/p/trunk/README.md", []string{"README.md/"}},
		{"fossil clone opens a check-out", "fossil clone https://fossil.example/home/proj", []string{"proj.fossil", "proj/"}},
		{"fossil clone into a file", "fossil clone https://fossil.example/proj p.fossil", []string{"p.fossil"}},
		{"fossil clone --workdir", "fossil clone https://fossil.example/proj p.fossil --workdir src", []string{"p.fossil", "src/"}},
		{"fossil open: among the user's files, not remembered", "fossil open p.fossil", []string{}},
		{"bzr branch", "bzr branch lp:proj", []string{"proj/"}},
		{"brz checkout into a directory", "brz checkout https://code.example/b/trunk work", []string{"work/"}},
		{"darcs clone", "darcs clone https://hub.darcs.net/u/repo", []string{"repo/"}},
		{"darcs get into a directory", "darcs get --lazy https://hub.darcs.net/u/repo d2", []string{"d2/"}},
		{"pijul clone", "pijul clone https://nest.pijul.com/pijul/pijul", []string{"pijul/"}},
		{"cvs checkout", "cvs -d :pserver:anon@cvs.example:/cvsroot checkout mod", []string{"mod/"}},
		// hg, bzr, darcs and pijul clone only into an empty directory, as
		// git: into "." the working directory is the clone; svn checkout
		// checks out among files already there.
		{"hg clone into the working directory", "hg clone https://hg.example/r .", []string{"./"}},
		{"hg --cwd DIR clone URL . fills DIR", "hg --cwd /tmp/h clone https://hg.example/r .", []string{"/tmp/h/"}},
		{"bzr branch into the working directory", "bzr branch lp:proj ./", []string{"./"}},
		{"darcs clone into the working directory", "darcs clone https://hub.darcs.net/u/repo .", []string{"./"}},
		{"pijul clone into the working directory", "pijul clone https://nest.pijul.com/x/y .", []string{"./"}},
		{"svn export into the working directory", "svn export https://svn.example/p/trunk .", []string{"./"}},
		{"svn export --force into .: among the user's files, not remembered", "svn export --force https://svn.example/p/trunk .", []string{}},
		{"svn checkout into .: among the user's files, not remembered", "svn checkout https://svn.example/p/trunk .", []string{}},
		{"cvs co -d", "cvs -d :pserver:anon@cvs.example:/cvsroot co -d work mod", []string{"work/"}},
		// Packages' and models' downloaders.
		{"pip download -d", "pip download requests -d /tmp/pkgs", []string{"/tmp/pkgs/"}},
		{"pip download: among the user's files, not remembered", "pip download requests", []string{}},
		{"python -m pip download --dest=", "python3 -m pip download --dest=wheels requests", []string{"wheels/"}},
		{"pip wheel -w", "pip wheel -w wh requests", []string{"wh/"}},
		{"npm pack of a version", "npm pack left-pad@1.3.0", []string{"left-pad-1.3.0.tgz"}},
		{"npm pack of a scoped version", "npm pack @scope/x@2.0.0-rc.1 --pack-destination /tmp/p", []string{"/tmp/p/scope-x-2.0.0-rc.1.tgz"}},
		{"npm pack of a tag: among the user's files, not remembered", "npm pack left-pad@latest", []string{}},
		{"huggingface-cli download --local-dir", "huggingface-cli download gpt2 config.json --local-dir m", []string{"m/"}},
		{"hf download into the cache", "hf download org/model", []string{"models--org--model/"}},
		{"hf download of a dataset", "hf download --repo-type dataset org/data", []string{"datasets--org--data/"}},
		{"yt-dlp: among the user's files, not remembered", "yt-dlp https://video.example/v", []string{}},
		{"yt-dlp's subtitles under a template", "yt-dlp -o 'subs/%(id)s.%(ext)s' --write-auto-subs --skip-download https://video.example/v", []string{"subs/"}},
		{"yt-dlp -P", "yt-dlp -P /tmp/v https://video.example/v", []string{"/tmp/v/"}},
		{"yt-dlp -o a file, as before", "yt-dlp -o out.mp4 https://video.example/v", []string{"out.mp4"}},
		{"kaggle datasets download -p", "kaggle datasets download -d owner/ds -p data", []string{"data/"}},
		{"kaggle competitions download: among the user's files, not remembered", "kaggle competitions download -c titanic", []string{}},
		{"gdown: among the user's files, not remembered", "gdown https://drive.example/uc?id=1", []string{}},
		{"gdown --folder -O", "gdown --folder https://drive.example/f -O docs", []string{"docs/"}},
		// What writes nothing new.
		{"wget without -r keeps the URL's name", "wget -q https://x.example/docs/guide.html", []string{"guide.html"}},
		{"curl -o of a variable names nothing", `curl -o "$OUT" https://x.example/a`, []string{}},
		{"an expansion under / alone names nothing", "curl -o /$(x) https://x.example/a", []string{}},
		{"curl with a header from a variable keeps the URL's name", `curl -H "Authorization: $T" -O https://x.example/a.sh`, []string{"a.sh"}},
		{"wget --help", "wget --help", []string{}},
		{"gh release list", "gh release list", []string{}},
		{"gh release download to the standard output", "gh release download v1 -O - | tar xz -C out", []string{"out/"}},
		{"gh run view", "gh run view 123 --log", []string{}},
		{"svn status", "svn status && svn log -l 5", []string{}},
		{"hg status", "hg status && hg pull", []string{}},
		{"cvs co -p prints", "cvs -d :pserver:anon@cvs.example:/cvsroot co -p mod/README", []string{}},
		{"pip install", "pip install requests yt-dlp", []string{}},
		{"npm pack of the project's own package", "npm pack && npm pack ./pkg", []string{}},
		{"yt-dlp -F lists", "yt-dlp -F https://video.example/v", []string{}},
		{"kaggle datasets list", "kaggle datasets list -s titanic", []string{}},
		{"go mod download", "go mod download", []string{}},
		{"git lfs pull", "git lfs pull", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Writes(tt.line); !slices.Equal(got, tt.want) {
				t.Errorf("Writes(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
	if got := ArgvWrites([]string{"hg", "clone", "https://hg.example/r"}); !slices.Equal(got, []string{"r/"}) {
		t.Errorf("ArgvWrites = %q", got)
	}
}
