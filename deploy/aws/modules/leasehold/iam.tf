# The IAM roles of the tasks.
#
# - One execution role, which ECS itself uses to pull the image and to write
#   the containers' output to their log groups.
# - One task role per process, which leasehold's own requests are signed
#   with: each grants exactly the actions that process sends, each on the
#   resources it sends them to, and nothing else. The actions are
#   local.task_grants below, by the kind of resource they go to; the kinds
#   are local.grant_resources. tests/deploy/terraform_check.mjs holds
#   task_grants against `leasehold store schema --json` (the code's own list
#   of the requests each process makes), so an action the code starts to
#   send, or stops sending, fails the test until it is granted or removed
#   here. docs/server.md, "IAM on AWS", says what each action is for.

locals {
  table_arns = [
    aws_dynamodb_table.leases.arn,
    aws_dynamodb_table.connections.arn,
    aws_dynamodb_table.fleet_workers.arn,
    aws_dynamodb_table.accounts.arn,
    aws_dynamodb_table.queue_messages.arn,
    aws_dynamodb_table.movies.arn,
    aws_dynamodb_table.movie_frames.arn,
    aws_dynamodb_table.movie_times.arn,
    aws_dynamodb_table.movie_audit.arn,
  ]

  # The resources each kind of grant covers: the `on` of the schema's
  # process lists.
  grant_resources = {
    tables  = local.table_arns
    indexes = [for arn in local.table_arns : "${arn}/index/*"]
    # Only the connections table has a stream (the fleet's change feed).
    streams = ["${aws_dynamodb_table.connections.arn}/stream/*"]
    # The job queues; the dead-letter queues are not read by the processes.
    queues  = [aws_sqs_queue.trace.arn, aws_sqs_queue.probe.arn]
    objects = ["${aws_s3_bucket.media.arn}/${local.media_prefix}*"]
    # s3:ListBucket, so that S3 answers a missing movie 404 and not 403;
    # limited to the movies' folder by a condition below.
    bucket = [aws_s3_bucket.media.arn]
  }

  # What each process's task role grants, by the kind of resource: the
  # schema's `processes`. Not its `processes_if_missing` (serve's
  # CreateTable, UpdateTable, ListStreams): those are sent only when a table
  # is missing, and Terraform makes every table.
  task_grants = {
    worker = {
      # Items by key; queries go to the indexes only.
      tables = [
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
      ]
      indexes = ["dynamodb:Query"]
      streams = [
        "dynamodb:DescribeStream",
        "dynamodb:GetShardIterator",
        "dynamodb:GetRecords",
      ]
    }
    serve = {
      tables = [
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
      ]
      indexes = ["dynamodb:Query"]
      queues = [
        "sqs:GetQueueUrl",
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
      ]
      objects = [
        "s3:PutObject",
        "s3:GetObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
      ]
      bucket = ["s3:ListBucket"]
    }
    "trace-worker" = {
      tables = [
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
      ]
      indexes = ["dynamodb:Query"]
      queues = [
        "sqs:GetQueueUrl",
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
      ]
      # A trace worker runs probe workers too, which finish removals, and
      # the sweep, which repairs uploads and removals a crash left.
      objects = [
        "s3:PutObject",
        "s3:GetObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
      ]
      bucket = ["s3:ListBucket"]
    }
  }
}

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }

    # Only ECS tasks of this account (the confused-deputy guard).
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

# ---------------------------------------------------------------- execution role

resource "aws_iam_role" "execution" {
  name               = "${var.name}-leasehold-execution"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = local.tags
}

data "aws_iam_policy_document" "execution" {
  # Pulling the image: the token is account-wide; the layers may come from
  # any repository the image names (ECR refuses what the account may not read).
  statement {
    sid = "PullImage"
    actions = [
      "ecr:GetAuthorizationToken",
      "ecr:BatchCheckLayerAvailability",
      "ecr:GetDownloadUrlForLayer",
      "ecr:BatchGetImage",
    ]
    resources = ["*"]
  }

  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for g in aws_cloudwatch_log_group.service : "${g.arn}:*"]
  }
}

resource "aws_iam_role_policy" "execution" {
  name   = "pull-and-log"
  role   = aws_iam_role.execution.id
  policy = data.aws_iam_policy_document.execution.json
}

# ---------------------------------------------------------------- task roles

resource "aws_iam_role" "task" {
  for_each           = local.services
  name               = "${var.name}-leasehold-${each.key}"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = local.tags
}

data "aws_iam_policy_document" "task" {
  for_each = local.task_grants

  # One statement per kind of resource: its actions on its resources.
  dynamic "statement" {
    for_each = each.value
    content {
      sid       = replace(title(replace(statement.key, "-", " ")), " ", "")
      actions   = statement.value
      resources = local.grant_resources[statement.key]

      # ListBucket only for keys under the movies' folder.
      dynamic "condition" {
        for_each = statement.key == "bucket" ? [local.media_prefix] : []
        content {
          test     = "StringLike"
          variable = "s3:prefix"
          values   = ["${condition.value}*"]
        }
      }
    }
  }
}

resource "aws_iam_role_policy" "task" {
  for_each = local.task_grants
  name     = "leasehold-${each.key}"
  role     = aws_iam_role.task[each.key].id
  policy   = data.aws_iam_policy_document.task[each.key].json
}
