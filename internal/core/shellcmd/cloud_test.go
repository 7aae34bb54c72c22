package shellcmd

import (
	"slices"
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
