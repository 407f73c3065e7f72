# CloudWatch alarms for what an operator must act on. Each notifies
# alarm_topic_arn, when given, on alarm and on recovery.
#
# - connections STARTED but not streaming, for 5 minutes on end: the fleet
#   summary's leasehold_fleet_connections_not_streaming (serve's EMF
#   metric) stayed above 0, its minimum over each minute. A takeover's
#   seconds of silence do not last a minute; an upstream refusing, or too
#   few workers for the connections, does.
# - failover time: the 99th percentile of leasehold_fleet_takeover_gap_seconds
#   (the workers' EMF histogram: a taken-over connection's silence, from its
#   previous holder's last message to the taker's first) over 5 minutes
#   above failover_p99_seconds. No takeovers, no data: not an alarm.
# - dead letters: a job queue's dead-letter queue holds a message (a job
#   that failed 5 deliveries; read it with `aws sqs receive-message`).
# - 5xx rate: the share of requests through the load balancer answered 5xx
#   (HTTPCode_Target_5XX_Count, serve's own, and HTTPCode_ELB_5XX_Count, the
#   load balancer's when no serve task answers, over RequestCount) above
#   http_5xx_percent in 3 of 5 minutes.

locals {
  alarm_actions = var.alarm_topic_arn == null ? [] : [var.alarm_topic_arn]
}

resource "aws_cloudwatch_metric_alarm" "connections_not_streaming" {
  alarm_name          = "${var.name}-leasehold-connections-not-streaming"
  alarm_description   = "STARTED connections that have not been streaming for 5 minutes: see the Fleet page (problems) and the workers' logs."
  namespace           = var.metrics_namespace
  metric_name         = "leasehold_fleet_connections_not_streaming"
  dimensions          = { Service = "serve" }
  statistic           = "Minimum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  # serve not reporting is the 5xx and health alarms' business.
  treat_missing_data = "notBreaching"
  alarm_actions      = local.alarm_actions
  ok_actions         = local.alarm_actions
  tags               = local.tags
}

resource "aws_cloudwatch_metric_alarm" "failover_time" {
  alarm_name          = "${var.name}-leasehold-failover-time-p99"
  alarm_description   = "The 99th percentile of the gap users saw when a worker's connections were taken over is above ${var.failover_p99_seconds} s."
  namespace           = var.metrics_namespace
  metric_name         = "leasehold_fleet_takeover_gap_seconds"
  dimensions          = { Service = "worker" }
  extended_statistic  = "p99"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.failover_p99_seconds
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = local.tags
}

resource "aws_cloudwatch_metric_alarm" "dead_letters" {
  for_each = {
    trace = aws_sqs_queue.trace_dead.name
    probe = aws_sqs_queue.probe_dead.name
  }
  alarm_name          = "${var.name}-leasehold-${each.key}-dead-letters"
  alarm_description   = "${each.value} holds a job that failed 5 deliveries."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = local.tags
}

resource "aws_cloudwatch_metric_alarm" "http_5xx_rate" {
  alarm_name          = "${var.name}-leasehold-serve-5xx-rate"
  alarm_description   = "More than ${var.http_5xx_percent} % of serve's answers are 5xx (503: the store or AWS refused; the log has the cause under the request ID)."
  evaluation_periods  = 5
  datapoints_to_alarm = 3
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.http_5xx_percent
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions

  metric_query {
    id    = "rate"
    label = "5xx, % of requests"
    # A minute without a 5xx has no datapoint of either count: FILL makes it 0.
    expression  = "100 * (FILL(target_5xx, 0) + FILL(elb_5xx, 0)) / IF(requests > 0, requests, 1)"
    return_data = true
  }

  # Answered 5xx by serve.
  metric_query {
    id = "target_5xx"

    metric {
      namespace   = "AWS/ApplicationELB"
      metric_name = "HTTPCode_Target_5XX_Count"
      dimensions  = { LoadBalancer = aws_lb.serve.arn_suffix }
      stat        = "Sum"
      period      = 60
    }
  }

  # Answered 5xx by the load balancer itself: no healthy serve task (503),
  # a connection to one refused or cut (502), one too slow (504).
  metric_query {
    id = "elb_5xx"

    metric {
      namespace   = "AWS/ApplicationELB"
      metric_name = "HTTPCode_ELB_5XX_Count"
      dimensions  = { LoadBalancer = aws_lb.serve.arn_suffix }
      stat        = "Sum"
      period      = 60
    }
  }

  metric_query {
    id = "requests"

    metric {
      namespace   = "AWS/ApplicationELB"
      metric_name = "RequestCount"
      dimensions  = { LoadBalancer = aws_lb.serve.arn_suffix }
      stat        = "Sum"
      period      = 60
    }
  }

  tags = local.tags
}
