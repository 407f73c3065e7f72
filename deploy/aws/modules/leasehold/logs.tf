# One CloudWatch log group per service: the processes' JSON log lines
# (stderr), their embedded-metric-format lines (stdout, one a minute, from
# which CloudWatch makes the metrics the alarms and the dashboard use), and,
# with the default `--sink stdout`, the workers' messages.

resource "aws_cloudwatch_log_group" "service" {
  for_each          = local.services
  name              = "/leasehold/${var.name}/${each.key}"
  retention_in_days = var.log_retention_days
  tags              = local.tags
}
