# The DynamoDB tables, exactly as `leasehold store init` creates them: the
# same names (the store URI's prefix NAME_ + the logical name), keys,
# attribute types, global secondary indexes and projections, on-demand
# billing, and the connections table's stream (NEW_AND_OLD_IMAGES), which one
# worker of the fleet reads to tell the others what changed (docs/schema.md).
# tests/deploy/terraform_check.mjs holds every table here against
# `leasehold store schema --json`, so a table that the code changes and this
# file does not fails the test.
#
# Unlike `store init`, Terraform also turns on point-in-time recovery (35
# days of restores) and deletion protection. Attributes that are not keys of
# the table or of an index are not declared: DynamoDB is schemaless there.

resource "aws_dynamodb_table" "leases" {
  name                        = "${local.table_prefix}leases"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "kind"
    type = "S"
  }

  attribute {
    name = "lease_expires_at_ms"
    type = "N"
  }

  attribute {
    name = "pk"
    type = "S"
  }

  global_secondary_index {
    name            = "kind-lease_expires_at_ms-index"
    hash_key        = "kind"
    range_key       = "lease_expires_at_ms"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "connections" {
  name                        = "${local.table_prefix}connections"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "Pk"
  deletion_protection_enabled = var.deletion_protection
  stream_enabled              = true
  stream_view_type            = "NEW_AND_OLD_IMAGES"

  attribute {
    name = "Pk"
    type = "S"
  }

  attribute {
    name = "desired_state"
    type = "S"
  }

  attribute {
    name = "lease_epoch"
    type = "N"
  }

  attribute {
    name = "lease_expires_at_ms"
    type = "N"
  }

  attribute {
    name = "lease_session"
    type = "S"
  }

  global_secondary_index {
    name            = "desired_state-lease_expires_at_ms-index"
    hash_key        = "desired_state"
    range_key       = "lease_expires_at_ms"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "lease_session-lease_epoch-index"
    hash_key        = "lease_session"
    range_key       = "lease_epoch"
    projection_type = "INCLUDE"
    non_key_attributes = [
      "desired_state",
      "ws_url",
      "seq_field",
      "lease_owner",
      "lease_token",
      "lease_expires_at_ms",
    ]
  }

  global_secondary_index {
    name            = "desired_state-Pk-index"
    hash_key        = "desired_state"
    range_key       = "Pk"
    projection_type = "INCLUDE"
    non_key_attributes = [
      "ws_url",
      "seq_field",
      "last_seq",
      "last_error",
      "last_error_at_ms",
      "created_at_ms",
      "messages",
      "reconnects",
      "last_message_at_ms",
      "lease_owner",
      "lease_epoch",
      "lease_expires_at_ms",
      "lease_heartbeat_at_ms",
      "lease_session",
    ]
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "fleet_workers" {
  name                        = "${local.table_prefix}fleet_workers"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "Pk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "Pk"
    type = "S"
  }

  attribute {
    name = "kind"
    type = "S"
  }

  global_secondary_index {
    name            = "kind-Pk-index"
    hash_key        = "kind"
    range_key       = "Pk"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "accounts" {
  name                        = "${local.table_prefix}accounts"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "created_at_ms"
    type = "N"
  }

  attribute {
    name = "kind"
    type = "S"
  }

  attribute {
    name = "name"
    type = "S"
  }

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "user"
    type = "S"
  }

  global_secondary_index {
    name            = "user-created_at_ms-index"
    hash_key        = "user"
    range_key       = "created_at_ms"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "kind-name-index"
    hash_key        = "kind"
    range_key       = "name"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "queue_messages" {
  name                        = "${local.table_prefix}queue_messages"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "queue_state"
    type = "S"
  }

  attribute {
    name = "visible_at_ms"
    type = "N"
  }

  global_secondary_index {
    name            = "queue_state-visible_at_ms-index"
    hash_key        = "queue_state"
    range_key       = "visible_at_ms"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "movies" {
  name                        = "${local.table_prefix}movies"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "created_at_ms"
    type = "N"
  }

  attribute {
    name = "kind"
    type = "S"
  }

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "status"
    type = "S"
  }

  global_secondary_index {
    name            = "kind-created_at_ms-index"
    hash_key        = "kind"
    range_key       = "created_at_ms"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "status-created_at_ms-index"
    hash_key        = "status"
    range_key       = "created_at_ms"
    projection_type = "KEYS_ONLY"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "movie_frames" {
  name                        = "${local.table_prefix}movie_frames"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "movie_times" {
  name                        = "${local.table_prefix}movie_times"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

resource "aws_dynamodb_table" "movie_audit" {
  name                        = "${local.table_prefix}movie_audit"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = local.tags
}

