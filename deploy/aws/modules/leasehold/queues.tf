# The movie service's SQS job queues, as `leasehold store init --queue`
# makes them: NAME-movie-trace and NAME-movie-probe (the queue URI
# sqs://REGION/NAME, given to `serve` and the trace workers), each with a
# dead-letter queue NAME-movie-*-dead that keeps its messages 14 days, joined
# by a redrive policy: a job delivered 5 times without being done moves
# there (docs/server.md, "Jobs on SQS"). The processes never read the
# dead-letter queues; an alarm watches them (alarms.tf).
#
# The job queues keep SQS's defaults, as `store init` does: the processes
# set a message's visibility themselves when they receive it.

locals {
  # What `store init` gives a dead-letter queue and a redrive policy
  # (tests/deploy/terraform_check.mjs holds these against
  # `leasehold store schema --json`).
  dead_letter_retention_seconds = 1209600
  job_max_receive_count         = 5

  redrive = {
    trace = {
      deadLetterTargetArn = aws_sqs_queue.trace_dead.arn
      maxReceiveCount     = local.job_max_receive_count
    }
    probe = {
      deadLetterTargetArn = aws_sqs_queue.probe_dead.arn
      maxReceiveCount     = local.job_max_receive_count
    }
  }
}

resource "aws_sqs_queue" "trace_dead" {
  name                      = "${var.name}-movie-trace-dead"
  message_retention_seconds = local.dead_letter_retention_seconds
  sqs_managed_sse_enabled   = true
  tags                      = local.tags
}

resource "aws_sqs_queue" "trace" {
  name                    = "${var.name}-movie-trace"
  redrive_policy          = jsonencode(local.redrive.trace)
  sqs_managed_sse_enabled = true
  tags                    = local.tags
}

resource "aws_sqs_queue" "probe_dead" {
  name                      = "${var.name}-movie-probe-dead"
  message_retention_seconds = local.dead_letter_retention_seconds
  sqs_managed_sse_enabled   = true
  tags                      = local.tags
}

resource "aws_sqs_queue" "probe" {
  name                    = "${var.name}-movie-probe"
  redrive_policy          = jsonencode(local.redrive.probe)
  sqs_managed_sse_enabled = true
  tags                    = local.tags
}
