# The names and URIs every other file of the module uses, in one place.
#
# leasehold finds its AWS resources by naming convention, from three URIs
# the processes are given:
#   the store   dynamodb://REGION/NAME_        table T is NAME_T
#   the queues  sqs://REGION/NAME              NAME-movie-trace, NAME-movie-probe
#   the media   s3://BUCKET/movies/?region=R   objects movies/<file>
# so the tables, queues and bucket below are named to match, and the same
# URIs go to the tasks (services.tf) and to the operator (outputs.tf).

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  region     = data.aws_region.current.name
  account_id = data.aws_caller_identity.current.account_id

  # The store URI's table prefix: table T is "${local.table_prefix}T".
  table_prefix = "${var.name}_"
  store_uri    = "dynamodb://${local.region}/${local.table_prefix}"

  # The queue URI's NAME: the queues are NAME-movie-trace and NAME-movie-probe,
  # each with a NAME-movie-*-dead dead-letter queue.
  queue_uri = "sqs://${local.region}/${var.name}"

  # The movies' folder in the bucket (leasehold makes a prefix end in "/").
  media_prefix = "movies/"
  bucket_name  = "${var.name}-leasehold-${local.account_id}-${local.region}"
  media_uri    = "s3://${local.bucket_name}/${local.media_prefix}?region=${local.region}"

  # The three processes, as ECS services; the keys are their subcommands.
  services = toset(["worker", "serve", "trace-worker"])

  tags = merge({ "leasehold:deployment" = var.name }, var.tags)
}
