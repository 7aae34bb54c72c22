package shellcmd

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// Downloads out of a bucket that a review (stop 42) found Programs did not
// label "bucket read": other clients, other verbs and their orders,
// Windows' .cmd, PowerShell's cmdlets, wrappers, containers, mounts.
func TestBucketReadsOfEveryClient(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"rclone boolean -c between source and destination", "rclone copy remote:inbox/ticket.txt -c ./in"},
		{"rclone boolean -u between source and destination", "rclone copyto s3:acme-uploads/t.txt -u t.txt"},
		{"gsutil cp -I reads its sources from stdin", "echo gs://b/ticket.txt | gsutil cp -I ./in"},
		{"azcopy to a pipe (--from-to=BlobPipe)", "azcopy copy 'https://acct.blob.core.windows.net/c/x.txt?sv=1' --from-to=BlobPipe"},
		{"azcopy to a pipe, option first", "azcopy cp --from-to BlobPipe 'https://acct.blob.core.windows.net/c/x.txt?sv=1'"},
		{"az storage copy downloads", "az storage copy -s https://acct.blob.core.windows.net/c/x.txt -d ./x.txt"},
		{"aws s3api select-object-content", `aws s3api select-object-content --bucket b --key k.csv --expression "select * from s3object" --expression-type SQL --input-serialization '{"CSV":{}}' --output-serialization '{"CSV":{}}' /dev/stdout`},
		{"aws global value option between s3 and cp", "aws s3 --cli-binary-format raw-in-base64-out cp s3://b/ticket.txt -"},
		{"aws global value option between s3api and get-object", "aws s3api --cli-binary-format raw-in-base64-out get-object --bucket b --key k /dev/stdout"},
		{"gcloud flag between storage and cat", "gcloud storage --verbosity info cat gs://b/ticket.txt"},
		{"python -m awscli", "python3 -m awscli s3 cp s3://b/ticket.txt -"},
		{"aws-vault exec wrapper", "aws-vault exec prod -- aws s3 cp s3://b/ticket.txt -"},
		{"docker aws-cli image", "docker run --rm -v ~/.aws:/root/.aws amazon/aws-cli s3 cp s3://b/ticket.txt -"},
		{"s5cmd cat", "s5cmd cat s3://b/ticket.txt"},
		{"MinIO mc cat", "mc cat play/acme-uploads/ticket.txt"},
		{"Backblaze b2", "b2 file download b2://bucket/ticket.txt ./t.txt"},
		{"OCI object get", "oci os object get -bn bucket --name ticket.txt --file -"},
		{"Windows gcloud.cmd", "gcloud.cmd storage cat gs://b/ticket.txt"},
		{"Windows az.cmd", "az.cmd storage blob download -c c -n x.txt --account-name acct"},
		{"PowerShell Read-S3Object", "Read-S3Object -BucketName b -Key ticket.txt -File t.txt; Get-Content t.txt"},
		{"PowerShell Read-GcsObject", "Read-GcsObject -Bucket b -ObjectName ticket.txt"},
		{"PowerShell Get-AzStorageBlobContent", "Get-AzStorageBlobContent -Container c -Blob x.txt -Destination ."},
		{"boto3 in inline python", `python3 -c "import boto3; print(boto3.client('s3').get_object(Bucket='b', Key='k')['Body'].read())"`},
		{"rclone mount, then read", "rclone mount remote:inbox /mnt/inbox --daemon && cat /mnt/inbox/ticket.txt"},
		{"gcsfuse, then read", "gcsfuse acme-uploads /mnt/b && cat /mnt/b/ticket.txt"},
	} {
		if got := Programs(tc.line); !slices.Contains(got, BucketRead) && !slices.Contains(got, "script url") && !slices.Contains(got, Unknown) {
			t.Errorf("%s: Programs(%q) = %v, no bucket read", tc.name, tc.line, got)
		}
	}
}

// A recursive download fills a directory: Writes names it as one, so a
// later read of a file in it is labelled.
func TestRecursiveDownloadFillsADirectory(t *testing.T) {
	for _, line := range []string{
		"aws s3 cp --recursive s3://b/inbox/ ./in",
		"gsutil -m cp -r gs://b/inbox ./in",
		"rclone copy remote:inbox ./in",
		"gcloud storage cp -r gs://b/inbox ./in",
	} {
		got := Writes(line)
		dir := false
		for _, w := range got {
			if p, ok := DirWritten(w); ok && (p == "./in" || p == "in") {
				dir = true
			}
		}
		if !dir {
			t.Errorf("Writes(%q) = %v: ./in not a directory written", line, got)
		}
	}
}

// Uploads are not downloads.
func TestUploadsAreNotBucketReads(t *testing.T) {
	for _, line := range []string{
		"gsutil cp -n ./dist/app.zip gs://b/releases/",
		"gsutil -h 'Cache-Control:no-cache' cp index.html gs://site/",
		"rclone copy ./dist remote:releases -P",
		"aws s3 cp ./report.pdf s3://b/report.pdf --metadata-directive REPLACE",
		"azcopy copy ./site 'https://acct.blob.core.windows.net/$web' --recursive",
		"az storage blob upload -c c -n x.txt -f x.txt --overwrite",
		"rclone copy --files-from list.txt ./src remote:dst",
		"gcloud storage cp --cache-control no-cache index.html gs://site/",
	} {
		if got := Programs(line); slices.Contains(got, BucketRead) {
			t.Errorf("Programs(%q) = %v: an upload labelled bucket read", line, got)
		}
	}
}

// From a second review (stop 42):

func labelled(line string) bool {
	got := Programs(line)
	return slices.Contains(got, BucketRead) || slices.Contains(got, "script url") || slices.Contains(got, Unknown)
}

// an option whose value is a URL (S3-compatible endpoints: MinIO,
// R2, LocalStack) placed after the operands becomes the destination:
// the download is taken for a bucket-to-bucket copy.
func TestBucketReadWithATrailingEndpoint(t *testing.T) {
	for _, line := range []string{
		"aws s3 cp s3://b/t.txt - --endpoint-url https://minio.local:9000",
		"aws s3 cp s3://b/t.txt ./t.txt --endpoint-url http://localhost:4566",
		"aws s3 cp s3://b/t.txt ./t.txt --profile r2 --endpoint-url https://acct.r2.cloudflarestorage.com",
	} {
		if !labelled(line) {
			t.Errorf("Programs(%q) = %v: no bucket read", line, Programs(line))
		}
	}
}

// MinIO's mc takes every word for remote (anyWord), so the local
// destination of cp/get is "another bucket".
func TestMinioDownloads(t *testing.T) {
	for _, line := range []string{
		"mc cp play/b/t.txt ./t.txt",
		"mc cp --recursive play/b/inbox ./in",
		"mc get play/b/t.txt t.txt",
	} {
		if !labelled(line) {
			t.Errorf("Programs(%q) = %v: no bucket read", line, Programs(line))
		}
	}
	if w := Writes("mc mirror play/b ./in"); !slices.Contains(w, "./in/") {
		t.Errorf("Writes(mc mirror play/b ./in) = %v: ./in/ not remembered", w)
	}
}

// a labelled download whose saved file Writes does not remember.
func TestDownloadedFilesRemembered(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"rclone copy remote:b ./in --max-age 24h", "in"},
		{"aws s3 cp s3://b/t.txt ./t.txt --sse-c AES256 --sse-c-key fileb://key.bin", "t.txt"},
		{"aws s3api get-object --bucket b --key k out.txt --endpoint-url http://localhost:4566", "out.txt"},
		{"s3fs b /mnt/b -o passwd_file=~/.passwd-s3fs", "/mnt/b"},
		{"azcopy copy 'https://a.blob.core.windows.net/c/t.txt?sv=x&sig=y' .", "t.txt"},
		{"az storage blob download -c c -n t.txt --file=t.txt", "t.txt"},
		{"aws-vault exec prod -- aws s3 cp s3://b/t.txt ./t.txt", "t.txt"},
		{"python3 -m awscli s3 cp s3://b/t.txt ./t.txt", "t.txt"},
		{"Read-S3Object -BucketName b -KeyPrefix inbox -Folder ./in", "in"},
	} {
		if !labelled(tc.line) {
			t.Errorf("Programs(%q) not labelled", tc.line)
		}
		w := Writes(tc.line)
		if !slices.ContainsFunc(w, func(f string) bool {
			d, _ := DirWritten(f)
			return path.Clean(strings.TrimPrefix(d, "./")) == tc.want
		}) {
			t.Errorf("Writes(%q) = %v: %s not remembered", tc.line, w, tc.want)
		}
	}
}

// clients and verbs that read a bucket and are not labelled.
func TestBucketReadsOfMoreClients(t *testing.T) {
	for _, line := range []string{
		"b2 sync b2://b/inbox ./in",
		"oci os object sync -bn b --dest-dir ./in",
		"az storage blob query -c c -n data.csv --query-expression 'SELECT * from BlobStorage' --account-name a",
		"docker run --rm gcr.io/google.com/cloudsdktool/google-cloud-cli:stable gsutil cat gs://b/t.txt",
		"docker run --rm --entrypoint=gsutil google/cloud-sdk cat gs://b/t.txt",
		"echo 'cp s3://b/t.txt .' | s5cmd run",
		"op run -- aws s3 cp s3://b/t.txt -",
		"doppler run -- aws s3 cp s3://b/t.txt -",
		"saml2aws exec -- aws s3 cp s3://b/t.txt -",
	} {
		if !labelled(line) {
			t.Errorf("Programs(%q) = %v: no bucket read", line, Programs(line))
		}
	}
}

// Precision: uploads labelled bucket read, because a value that
// looks like rclone's remote: (aws:kms, arn:…, uri=http://) is never
// skipped and becomes the "local destination".
func TestUploadsWithValuesAreNotBucketReads(t *testing.T) {
	for _, line := range []string{
		"aws s3 cp ./x.txt s3://b/x.txt --sse aws:kms",
		"aws s3 cp ./x.txt s3://b/x.txt --sse-kms-key-id arn:aws:kms:us-east-1:1:key/abc",
		"aws s3 cp ./x.txt s3://b/x.txt --grants read=uri=http://acs.amazonaws.com/groups/global/AllUsers",
		"Copy-S3Object -BucketName b -Key t.txt -DestinationKey t2.txt",
	} {
		if got := Programs(line); slices.Contains(got, BucketRead) {
			t.Errorf("Programs(%q) = %v: an upload labelled bucket read", line, got)
		}
	}
}
