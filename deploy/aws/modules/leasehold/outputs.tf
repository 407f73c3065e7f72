# What the deployment made, and the commands an operator runs against it.
#
# The `leasehold` commands run from any machine with the binary and AWS
# credentials allowed on these resources: the store URI goes in
# LEASEHOLD_STORE, as in the tasks.

output "url" {
  description = "Where browsers reach `serve` (domain_name, pointed at alb_dns_name, or the load balancer's own name)."
  value       = "https://${coalesce(var.domain_name, aws_lb.serve.dns_name)}"
}

output "alb_dns_name" {
  description = "The load balancer's DNS name: point domain_name at it (an alias record)."
  value       = aws_lb.serve.dns_name
}

output "alb_zone_id" {
  description = "The load balancer's hosted zone, for an alias record."
  value       = aws_lb.serve.zone_id
}

output "store_uri" {
  description = "The store URI every process uses (LEASEHOLD_STORE or --store)."
  value       = local.store_uri
}

output "queue_uri" {
  description = "The job queues' URI (--queue of serve and trace-worker)."
  value       = local.queue_uri
}

output "media_uri" {
  description = "The movies' location (--media-dir of serve and trace-worker)."
  value       = local.media_uri
}

output "table_names" {
  description = "The DynamoDB tables, by their logical names."
  value = {
    leases         = aws_dynamodb_table.leases.name
    connections    = aws_dynamodb_table.connections.name
    fleet_workers  = aws_dynamodb_table.fleet_workers.name
    accounts       = aws_dynamodb_table.accounts.name
    queue_messages = aws_dynamodb_table.queue_messages.name
    movies         = aws_dynamodb_table.movies.name
    movie_frames   = aws_dynamodb_table.movie_frames.name
    movie_times    = aws_dynamodb_table.movie_times.name
    movie_audit    = aws_dynamodb_table.movie_audit.name
  }
}

output "queue_urls" {
  description = "The SQS queues' URLs."
  value = {
    trace      = aws_sqs_queue.trace.url
    trace_dead = aws_sqs_queue.trace_dead.url
    probe      = aws_sqs_queue.probe.url
    probe_dead = aws_sqs_queue.probe_dead.url
  }
}

output "bucket" {
  description = "The movies' bucket."
  value       = aws_s3_bucket.media.bucket
}

output "cluster_name" {
  description = "The ECS cluster."
  value       = aws_ecs_cluster.this.name
}

output "log_groups" {
  description = "The log groups, by service."
  value       = { for service, group in aws_cloudwatch_log_group.service : service => group.name }
}

output "dashboard_name" {
  description = "The CloudWatch dashboard."
  value       = aws_cloudwatch_dashboard.this.dashboard_name
}

output "task_role_arns" {
  description = "Each process's task role."
  value       = { for service, role in aws_iam_role.task : service => role.arn }
}

output "commands" {
  description = "Commands an operator runs against this deployment."
  value = {
    # Idempotent: finds every table and queue made and changes nothing (it
    # exits 1 if a table has another key schema). Needs, beyond what the
    # processes need, the rights docs/server.md "IAM on AWS" lists for it.
    check_store = "LEASEHOLD_STORE='${local.store_uri}' leasehold store init --queue '${local.queue_uri}'"
    add_admin   = "LEASEHOLD_STORE='${local.store_uri}' leasehold user add admin --display-name 'Admin' --admin --password-stdin"
    add_conn    = "LEASEHOLD_STORE='${local.store_uri}' leasehold conn add ID --url wss://UPSTREAM/PATH"
    list_conns  = "LEASEHOLD_STORE='${local.store_uri}' leasehold conn list"
    stop_conn   = "LEASEHOLD_STORE='${local.store_uri}' leasehold conn stop ID"
    tail_logs   = "aws logs tail ${aws_cloudwatch_log_group.service["worker"].name} --follow --region ${local.region}"
    redeploy    = "aws ecs update-service --cluster ${aws_ecs_cluster.this.name} --service worker --force-new-deployment --region ${local.region}"
  }
}
