# Autoscaling of the three services, each by target tracking:
#
# - workers on STARTED connections per worker: the fleet's STARTED
#   connections (serve's fleet summary, leasehold_fleet_connections_started,
#   an EMF metric) divided by the worker service's running tasks (Container
#   Insights), held at worker_target_connections. The target sits below a
#   worker's --max-connections so that the others can take a stopping or
#   dying worker's share.
# - trace workers on the trace queue's backlog per task: jobs visible in
#   NAME-movie-trace divided by the running trace-worker tasks.
# - serve on its average CPU.
#
# Scaling in stops tasks as a deployment does: a worker hands its
# connections over, a trace worker fails the trace under way (the user may
# start it again), so scale-in waits longer than scale-out.

locals {
  scale_in_cooldown_seconds  = 300
  scale_out_cooldown_seconds = 60
}

resource "aws_appautoscaling_target" "worker" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.this.name}/${aws_ecs_service.worker.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.worker_min_count
  max_capacity       = var.worker_max_count
}

resource "aws_appautoscaling_policy" "worker_connections" {
  name               = "${var.name}-worker-connections-per-worker"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.worker.service_namespace
  resource_id        = aws_appautoscaling_target.worker.resource_id
  scalable_dimension = aws_appautoscaling_target.worker.scalable_dimension

  target_tracking_scaling_policy_configuration {
    target_value       = var.worker_target_connections
    scale_in_cooldown  = local.scale_in_cooldown_seconds
    scale_out_cooldown = local.scale_out_cooldown_seconds

    customized_metric_specification {
      metrics {
        id          = "started"
        label       = "STARTED connections (the fleet summary)"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = var.metrics_namespace
            metric_name = "leasehold_fleet_connections_started"

            dimensions {
              name  = "Service"
              value = "serve"
            }
          }
        }
      }

      metrics {
        id          = "workers"
        label       = "Running worker tasks"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "ECS/ContainerInsights"
            metric_name = "RunningTaskCount"

            dimensions {
              name  = "ClusterName"
              value = aws_ecs_cluster.this.name
            }

            dimensions {
              name  = "ServiceName"
              value = aws_ecs_service.worker.name
            }
          }
        }
      }

      metrics {
        id          = "per_worker"
        label       = "STARTED connections per worker"
        expression  = "started / IF(workers > 0, workers, 1)"
        return_data = true
      }
    }
  }
}

resource "aws_appautoscaling_target" "trace_worker" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.this.name}/${aws_ecs_service.trace_worker.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.trace_worker_min_count
  max_capacity       = var.trace_worker_max_count
}

resource "aws_appautoscaling_policy" "trace_worker_backlog" {
  name               = "${var.name}-trace-backlog-per-task"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.trace_worker.service_namespace
  resource_id        = aws_appautoscaling_target.trace_worker.resource_id
  scalable_dimension = aws_appautoscaling_target.trace_worker.scalable_dimension

  target_tracking_scaling_policy_configuration {
    target_value       = var.trace_backlog_per_task
    scale_in_cooldown  = local.scale_in_cooldown_seconds
    scale_out_cooldown = local.scale_out_cooldown_seconds

    customized_metric_specification {
      metrics {
        id          = "visible"
        label       = "Trace jobs waiting"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "AWS/SQS"
            metric_name = "ApproximateNumberOfMessagesVisible"

            dimensions {
              name  = "QueueName"
              value = aws_sqs_queue.trace.name
            }
          }
        }
      }

      metrics {
        id          = "tasks"
        label       = "Running trace-worker tasks"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "ECS/ContainerInsights"
            metric_name = "RunningTaskCount"

            dimensions {
              name  = "ClusterName"
              value = aws_ecs_cluster.this.name
            }

            dimensions {
              name  = "ServiceName"
              value = aws_ecs_service.trace_worker.name
            }
          }
        }
      }

      metrics {
        id          = "backlog_per_task"
        label       = "Trace jobs waiting per trace-worker task"
        expression  = "visible / IF(tasks > 0, tasks, 1)"
        return_data = true
      }
    }
  }
}

resource "aws_appautoscaling_target" "serve" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.this.name}/${aws_ecs_service.serve.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.serve_min_count
  max_capacity       = var.serve_max_count
}

resource "aws_appautoscaling_policy" "serve_cpu" {
  name               = "${var.name}-serve-cpu"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.serve.service_namespace
  resource_id        = aws_appautoscaling_target.serve.resource_id
  scalable_dimension = aws_appautoscaling_target.serve.scalable_dimension

  target_tracking_scaling_policy_configuration {
    target_value       = var.serve_cpu_target_percent
    scale_in_cooldown  = local.scale_in_cooldown_seconds
    scale_out_cooldown = local.scale_out_cooldown_seconds

    predefined_metric_specification {
      predefined_metric_type = "ECSServiceAverageCPUUtilization"
    }
  }
}
