# A CloudWatch dashboard of the deployment: the EMF metrics the processes
# write (namespace var.metrics_namespace, dimension Service), the job
# queues, the load balancer and the tasks. Metric names are leasehold's
# Prometheus family names; counters arrive as their increase per minute, so
# Sum over a period is the count in it.

locals {
  ns = var.metrics_namespace

  dashboard_widgets = [
    {
      title = "Connections (fleet summary)"
      metrics = [
        [local.ns, "leasehold_fleet_connections_started", "Service", "serve", { stat = "Average", label = "STARTED" }],
        [local.ns, "leasehold_fleet_connections_streaming", "Service", "serve", { stat = "Average", label = "streaming" }],
        [local.ns, "leasehold_fleet_connections_not_streaming", "Service", "serve", { stat = "Average", label = "STARTED, not streaming" }],
      ]
    },
    {
      title = "Connections owned, per worker"
      metrics = [
        [local.ns, "leasehold_fleet_owned_connections", "Service", "worker", { stat = "Average", label = "average" }],
        [local.ns, "leasehold_fleet_owned_connections", "Service", "worker", { stat = "Maximum", label = "most" }],
        [local.ns, "leasehold_fleet_owned_connections", "Service", "worker", { stat = "SampleCount", label = "workers reporting" }],
      ]
    },
    {
      title = "Failover: takeover gap (s)"
      metrics = [
        [local.ns, "leasehold_fleet_takeover_gap_seconds", "Service", "worker", { stat = "p50", label = "p50" }],
        [local.ns, "leasehold_fleet_takeover_gap_seconds", "Service", "worker", { stat = "p99", label = "p99" }],
      ]
    },
    {
      title = "Fleet moves and messages, per minute"
      metrics = [
        [local.ns, "leasehold_fleet_messages_total", "Service", "worker", { stat = "Sum", label = "messages" }],
        [local.ns, "leasehold_fleet_takeovers_total", "Service", "worker", { stat = "Sum", label = "takeovers", yAxis = "right" }],
        [local.ns, "leasehold_fleet_handovers_total", "Service", "worker", { stat = "Sum", label = "handovers", yAxis = "right" }],
      ]
    },
    {
      title = "serve: requests per minute and p99 latency (s)"
      metrics = [
        [local.ns, "leasehold_http_requests_total", "Service", "serve", { stat = "Sum", label = "requests" }],
        [local.ns, "leasehold_http_request_duration_seconds", "Service", "serve", { stat = "p99", label = "p99", yAxis = "right" }],
      ]
    },
    {
      title = "Load balancer"
      metrics = [
        ["AWS/ApplicationELB", "RequestCount", "LoadBalancer", aws_lb.serve.arn_suffix, { stat = "Sum", label = "requests" }],
        ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", "LoadBalancer", aws_lb.serve.arn_suffix, { stat = "Sum", label = "5xx from serve", yAxis = "right" }],
        ["AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count", "LoadBalancer", aws_lb.serve.arn_suffix, { stat = "Sum", label = "5xx from the load balancer", yAxis = "right" }],
      ]
    },
    {
      title = "Movies: trace jobs and traced frames, per minute"
      metrics = [
        [local.ns, "leasehold_movies_trace_jobs_total", "Service", "trace-worker", { stat = "Sum", label = "trace jobs" }],
        [local.ns, "leasehold_movies_traced_frames_total", "Service", "trace-worker", { stat = "Sum", label = "frames", yAxis = "right" }],
      ]
    },
    {
      title = "Job queues"
      metrics = [
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.trace.name, { stat = "Maximum", label = "trace: waiting" }],
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.probe.name, { stat = "Maximum", label = "probe: waiting" }],
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.trace_dead.name, { stat = "Maximum", label = "trace: dead letters" }],
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.probe_dead.name, { stat = "Maximum", label = "probe: dead letters" }],
      ]
    },
    {
      title = "Store: p99 operation time (s)"
      metrics = [
        for service in ["worker", "serve", "trace-worker"] :
        [local.ns, "leasehold_store_operation_seconds", "Service", service, { stat = "p99", label = service }]
      ]
    },
    {
      title = "Store: capacity units and errors, per minute"
      metrics = concat(
        [for service in ["worker", "serve", "trace-worker"] :
        [local.ns, "leasehold_store_capacity_units_total", "Service", service, { stat = "Sum", label = "${service}: units" }]],
        [for service in ["worker", "serve", "trace-worker"] :
        [local.ns, "leasehold_store_errors_total", "Service", service, { stat = "Sum", label = "${service}: errors", yAxis = "right" }]],
      )
    },
    {
      title = "Running tasks"
      metrics = [
        for service in [aws_ecs_service.worker.name, aws_ecs_service.serve.name, aws_ecs_service.trace_worker.name] :
        ["ECS/ContainerInsights", "RunningTaskCount", "ClusterName", aws_ecs_cluster.this.name, "ServiceName", service, { stat = "Average", label = service }]
      ]
    },
  ]
}

resource "aws_cloudwatch_dashboard" "this" {
  dashboard_name = "${var.name}-leasehold"
  dashboard_body = jsonencode({
    widgets = [
      for i, w in local.dashboard_widgets : {
        type   = "metric"
        x      = (i % 2) * 12
        y      = floor(i / 2) * 6
        width  = 12
        height = 6
        properties = {
          title   = w.title
          metrics = w.metrics
          region  = local.region
          view    = "timeSeries"
          period  = 60
          stacked = false
        }
      }
    ]
  })
}
