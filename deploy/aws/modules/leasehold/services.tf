# The three processes as Fargate services, one container each:
#
# - worker        the stream fleet's workers (`leasehold worker`): they own
#                 the upstream WebSocket connections, stream them to their
#                 sink and hand them over when they stop.
# - serve         the HTTP API and the pages (`leasehold serve`), behind the
#                 load balancer (alb.tf), plain HTTP on 8080 inside the VPC.
# - trace-worker  the movie service's traces and probes
#                 (`leasehold trace-worker`), from the SQS queues.
#
# Each container is described in local.containers, the ECS container
# definition as data: the command (the image's ENTRYPOINT is the leasehold
# binary), the health check, the stop timeout. tests/deploy/terraform_check.mjs
# reads it to check every flag against `leasehold <command> --help`, and the
# ports, health paths and stop timeouts against each other and the load
# balancer. The store URI reaches the processes in LEASEHOLD_STORE, which the
# CLI reads in place of --store. Workers are not given --id: ECS cannot give
# each task its own argument, and a worker without one names itself after its
# host and a random suffix.
#
# Deployments replace tasks without a gap: new tasks start (up to 200 %)
# before old ones stop (never under 100 % healthy), and a deployment whose
# tasks do not become healthy is rolled back.

locals {
  # `serve` listens on all addresses (the load balancer reaches it through
  # the task's own address) in plain HTTP: the load balancer terminates TLS.
  serve_port = 8080
  # The workers serve /metrics and /healthz on loopback only (leasehold
  # refuses another address); the container health check runs inside the
  # task, so loopback reaches it.
  metrics_port = 9090

  # How long ECS waits after SIGTERM before SIGKILL (Fargate allows 120 s).
  stop_timeout_seconds = {
    # A worker stops reading, flushes its sink and releases every lease with
    # its final checkpoint: 1,000 connections take 0.4 to 0.7 s on DynamoDB
    # (docs/benchmarks.md, "Handing over 1,000 connections on SIGTERM"), so
    # the 10,000 that worker_max_connections allows at most take about 7 s;
    # 60 s is 8 times that. Killed instead, its connections would move only
    # when its session expires (3 s later) and be replayed from their last
    # checkpoint.
    worker = 60
    # `serve` drains requests for up to 5 s, then stops its probe worker (a
    # probe under way goes back to the queue); 30 s is six times the drain.
    # The load balancer has stopped sending it requests 15 s before
    # (deregistration_delay in alb.tf).
    serve = 30
    # A trace worker publishes a trace under way as failed and hands a probe
    # back to the queue, within a few seconds.
    "trace-worker" = 30
  }

  # Checked every 30 s inside the task; three failures in a row (the store
  # unreachable, the sink failing, or, for a worker, every stream it owns
  # stalled: docs/fleet.md, "Health") replace the task. The start period
  # covers opening the store, looking the queues up and a worker's first
  # reconciles.
  health_check = {
    path         = "/healthz"
    interval     = 30
    timeout      = 5
    retries      = 3
    start_period = 60
  }

  log_configuration = {
    for service in local.services : service => {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.service[service].name
        awslogs-region        = local.region
        awslogs-stream-prefix = "ecs"
      }
    }
  }

  environment = [
    { name = "LEASEHOLD_STORE", value = local.store_uri },
    { name = "AWS_REGION", value = local.region },
  ]

  containers = {
    worker = {
      name      = "worker"
      image     = var.image
      essential = true
      command = [
        "worker",
        "--max-connections", tostring(var.worker_max_connections),
        "--sink", var.worker_sink,
        "--stall-after", var.worker_stall_after,
        "--metrics-listen", "127.0.0.1:${local.metrics_port}",
        "--metrics-format", "emf",
        "--metrics-every", "60s",
        "--metrics-namespace", var.metrics_namespace,
      ]
      environment = local.environment
      healthCheck = {
        command     = ["CMD", "curl", "-fsS", "http://127.0.0.1:${local.metrics_port}${local.health_check.path}"]
        interval    = local.health_check.interval
        timeout     = local.health_check.timeout
        retries     = local.health_check.retries
        startPeriod = local.health_check.start_period
      }
      stopTimeout     = local.stop_timeout_seconds.worker
      linuxParameters = { initProcessEnabled = true }
      # One socket per upstream connection.
      ulimits          = [{ name = "nofile", softLimit = 65536, hardLimit = 65536 }]
      portMappings     = []
      logConfiguration = local.log_configuration["worker"]
    }

    serve = {
      name      = "serve"
      image     = var.image
      essential = true
      command = [
        "serve",
        "--listen", "0.0.0.0:${local.serve_port}",
        "--insecure-http",
        "--media-dir", local.media_uri,
        "--queue", local.queue_uri,
        # Traces run in the trace-worker service, which scales on the queue.
        "--trace-workers", "0",
        "--upload-max", var.upload_max,
        "--metrics-format", "emf",
        "--metrics-every", "60s",
        "--metrics-namespace", var.metrics_namespace,
      ]
      environment = local.environment
      healthCheck = {
        command     = ["CMD", "curl", "-fsS", "http://127.0.0.1:${local.serve_port}${local.health_check.path}"]
        interval    = local.health_check.interval
        timeout     = local.health_check.timeout
        retries     = local.health_check.retries
        startPeriod = local.health_check.start_period
      }
      stopTimeout      = local.stop_timeout_seconds.serve
      linuxParameters  = { initProcessEnabled = true }
      ulimits          = [{ name = "nofile", softLimit = 65536, hardLimit = 65536 }]
      portMappings     = [{ containerPort = local.serve_port, protocol = "tcp" }]
      logConfiguration = local.log_configuration["serve"]
    }

    "trace-worker" = {
      name      = "trace-worker"
      image     = var.image
      essential = true
      command = [
        "trace-worker",
        "--media-dir", local.media_uri,
        "--queue", local.queue_uri,
        "--trace-workers", tostring(var.traces_per_task),
        "--metrics-listen", "127.0.0.1:${local.metrics_port}",
        "--metrics-format", "emf",
        "--metrics-every", "60s",
        "--metrics-namespace", var.metrics_namespace,
      ]
      environment = local.environment
      healthCheck = {
        command     = ["CMD", "curl", "-fsS", "http://127.0.0.1:${local.metrics_port}${local.health_check.path}"]
        interval    = local.health_check.interval
        timeout     = local.health_check.timeout
        retries     = local.health_check.retries
        startPeriod = local.health_check.start_period
      }
      stopTimeout      = local.stop_timeout_seconds["trace-worker"]
      linuxParameters  = { initProcessEnabled = true }
      ulimits          = [{ name = "nofile", softLimit = 65536, hardLimit = 65536 }]
      portMappings     = []
      logConfiguration = local.log_configuration["trace-worker"]
    }
  }

  task_sizes = {
    worker         = { cpu = var.worker_cpu, memory = var.worker_memory }
    serve          = { cpu = var.serve_cpu, memory = var.serve_memory }
    "trace-worker" = { cpu = var.trace_worker_cpu, memory = var.trace_worker_memory }
  }
}

resource "aws_ecs_task_definition" "service" {
  for_each                 = local.containers
  family                   = "${var.name}-${each.key}"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = local.task_sizes[each.key].cpu
  memory                   = local.task_sizes[each.key].memory
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = aws_iam_role.task[each.key].arn
  container_definitions    = jsonencode([each.value])

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  # Uploads (serve) and the movies being read (both) are copied to the task's
  # storage while in use; a worker keeps nothing on disk.
  dynamic "ephemeral_storage" {
    for_each = each.key == "worker" ? [] : [var.ephemeral_storage_gib]
    content {
      size_in_gib = ephemeral_storage.value
    }
  }

  tags = local.tags
}

resource "aws_ecs_service" "worker" {
  name                               = "worker"
  cluster                            = aws_ecs_cluster.this.id
  task_definition                    = aws_ecs_task_definition.service["worker"].arn
  desired_count                      = var.worker_desired_count
  launch_type                        = "FARGATE"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  enable_ecs_managed_tags            = true
  propagate_tags                     = "SERVICE"

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.private_subnet_ids
    security_groups  = [aws_security_group.egress_only.id]
    assign_public_ip = false
  }

  lifecycle {
    # Autoscaling owns the count once the service exists.
    ignore_changes = [desired_count]

    precondition {
      condition     = var.worker_min_count <= var.worker_desired_count && var.worker_desired_count <= var.worker_max_count
      error_message = "worker_desired_count must lie between worker_min_count and worker_max_count."
    }
  }

  tags = local.tags
}

resource "aws_ecs_service" "serve" {
  name                               = "serve"
  cluster                            = aws_ecs_cluster.this.id
  task_definition                    = aws_ecs_task_definition.service["serve"].arn
  desired_count                      = var.serve_desired_count
  launch_type                        = "FARGATE"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  health_check_grace_period_seconds  = 60
  enable_ecs_managed_tags            = true
  propagate_tags                     = "SERVICE"

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.private_subnet_ids
    security_groups  = [aws_security_group.serve.id]
    assign_public_ip = false
  }

  load_balancer {
    target_group_arn = aws_lb_target_group.serve.arn
    container_name   = "serve"
    container_port   = local.serve_port
  }

  # The target group must belong to a listener before a service may use it.
  depends_on = [aws_lb_listener.https]

  lifecycle {
    ignore_changes = [desired_count]

    precondition {
      condition     = var.serve_min_count <= var.serve_desired_count && var.serve_desired_count <= var.serve_max_count
      error_message = "serve_desired_count must lie between serve_min_count and serve_max_count."
    }
  }

  tags = local.tags
}

resource "aws_ecs_service" "trace_worker" {
  name                               = "trace-worker"
  cluster                            = aws_ecs_cluster.this.id
  task_definition                    = aws_ecs_task_definition.service["trace-worker"].arn
  desired_count                      = var.trace_worker_desired_count
  launch_type                        = "FARGATE"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  enable_ecs_managed_tags            = true
  propagate_tags                     = "SERVICE"

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.private_subnet_ids
    security_groups  = [aws_security_group.egress_only.id]
    assign_public_ip = false
  }

  lifecycle {
    ignore_changes = [desired_count]

    precondition {
      condition     = var.trace_worker_min_count <= var.trace_worker_desired_count && var.trace_worker_desired_count <= var.trace_worker_max_count
      error_message = "trace_worker_desired_count must lie between trace_worker_min_count and trace_worker_max_count."
    }
  }

  tags = local.tags
}
