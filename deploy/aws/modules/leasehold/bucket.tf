# The S3 bucket of the movie files (`--media-dir s3://BUCKET/movies/`):
# private (every public access blocked, ownership enforced, TLS only),
# encrypted at rest with S3's keys (SSE-S3: the task roles need no KMS
# grant), and without versioning: a removed movie's object is gone, not kept
# as a billed old version. A lifecycle rule aborts multipart uploads left
# incomplete for a day: a process killed mid-upload leaves its parts, unseen
# and billed, and leasehold completes or aborts its own within the request
# (docs/server.md, "IAM on AWS", "Abandoned multipart uploads").
#
# Versioning is left off by declaring no aws_s3_bucket_versioning at all:
# a new bucket is unversioned.

resource "aws_s3_bucket" "media" {
  bucket = local.bucket_name
  # Without deletion protection, `terraform destroy` removes the movies too.
  force_destroy = !var.deletion_protection
  tags          = local.tags
}

resource "aws_s3_bucket_public_access_block" "media" {
  bucket                  = aws_s3_bucket.media.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "media" {
  bucket = aws_s3_bucket.media.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "media" {
  bucket = aws_s3_bucket.media.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "media" {
  bucket = aws_s3_bucket.media.id

  rule {
    id     = "abort-incomplete-uploads"
    status = "Enabled"

    filter {
      prefix = local.media_prefix
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

# Requests over plain HTTP are refused. Browsers download movies from
# presigned URLs, which leasehold makes for HTTPS.
data "aws_iam_policy_document" "media_tls_only" {
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.media.arn, "${aws_s3_bucket.media.arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "media" {
  bucket = aws_s3_bucket.media.id
  policy = data.aws_iam_policy_document.media_tls_only.json
  # S3 refuses a bucket policy while the public access block is being set.
  depends_on = [aws_s3_bucket_public_access_block.media]
}
