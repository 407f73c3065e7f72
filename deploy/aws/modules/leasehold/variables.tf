# The module's inputs. The region is the provider's (data.aws_region in
# main.tf); everything else one region's deployment needs is here, with
# defaults sized for a small fleet: two workers of 1,000 connections at most,
# two `serve` tasks, one trace worker.

variable "name" {
  description = "Name of this deployment: the tables are NAME_<table> (the store URI's prefix), the queues NAME-movie-*, and every other resource starts with it."
  type        = string

  validation {
    # DynamoDB, SQS, S3 and ALB names all accept this; 20 characters leave
    # room for the longest suffix an ALB target group name takes (32 at most).
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name))
    error_message = "name must be 1 to 20 characters of a-z, 0-9 and -, starting with a letter."
  }
}

variable "image" {
  description = "The leasehold container image (repository:tag or @digest), built from the repository's Dockerfile: ENTRYPOINT the leasehold binary, user 10001, curl for the health checks."
  type        = string

  validation {
    condition     = length(var.image) > 0
    error_message = "image must name a container image."
  }
}

variable "vpc_id" {
  description = "The VPC the tasks and the load balancer run in."
  type        = string
}

variable "private_subnet_ids" {
  description = "Subnets for the tasks: private, with a route to the internet (a NAT gateway) or VPC endpoints for DynamoDB, SQS, S3, ECR and CloudWatch Logs; the workers also reach their upstreams from here."
  type        = list(string)

  validation {
    condition     = length(var.private_subnet_ids) >= 2
    error_message = "Give at least two private subnets, in different availability zones."
  }
}

variable "public_subnet_ids" {
  description = "Public subnets for the load balancer, in at least two availability zones."
  type        = list(string)

  validation {
    condition     = length(var.public_subnet_ids) >= 2
    error_message = "An application load balancer needs subnets in at least two availability zones."
  }
}

variable "certificate_arn" {
  description = "ARN of the ACM certificate the load balancer's HTTPS listener presents (for domain_name)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:acm:", var.certificate_arn))
    error_message = "certificate_arn must be an ACM certificate ARN."
  }
}

variable "domain_name" {
  description = "The name browsers use for `serve` (the certificate's), pointed at the load balancer by you; only used in the outputs. Null: the load balancer's own DNS name."
  type        = string
  default     = null
}

variable "alb_ingress_cidrs" {
  description = "Addresses allowed to reach the load balancer on 443 (and 80, which redirects to 443)."
  type        = list(string)
  default     = ["0.0.0.0/0"]

  validation {
    condition     = alltrue([for c in var.alb_ingress_cidrs : can(cidrhost(c, 0))])
    error_message = "alb_ingress_cidrs must be IPv4 CIDR blocks."
  }
}

variable "ssl_policy" {
  description = "The HTTPS listener's security policy: one of ELB's TLS 1.3 policies (TLS13-1-2 also takes TLS 1.2 clients; TLS13-1-3 takes TLS 1.3 only)."
  type        = string
  default     = "ELBSecurityPolicy-TLS13-1-2-2021-06"

  validation {
    condition     = startswith(var.ssl_policy, "ELBSecurityPolicy-TLS13-")
    error_message = "ssl_policy must be a TLS 1.3 policy (ELBSecurityPolicy-TLS13-*)."
  }
}

variable "cpu_architecture" {
  description = "The image's CPU architecture on Fargate: X86_64 or ARM64."
  type        = string
  default     = "X86_64"

  validation {
    condition     = contains(["X86_64", "ARM64"], var.cpu_architecture)
    error_message = "cpu_architecture must be X86_64 or ARM64."
  }
}

# ---------------------------------------------------------------- workers

variable "worker_cpu" {
  description = "CPU units of a worker task (1024 = one vCPU)."
  type        = number
  default     = 512
}

variable "worker_memory" {
  description = "Memory of a worker task, MiB (a valid Fargate pairing with worker_cpu)."
  type        = number
  default     = 1024
}

variable "worker_desired_count" {
  description = "Workers started when the service is created; autoscaling moves it between the min and max after that."
  type        = number
  default     = 2
}

variable "worker_min_count" {
  description = "Fewest workers. Two or more, so that a worker's connections have somewhere to go when it stops."
  type        = number
  default     = 2

  validation {
    condition     = var.worker_min_count >= 1
    error_message = "worker_min_count must be at least 1."
  }
}

variable "worker_max_count" {
  description = "Most workers."
  type        = number
  default     = 20
}

variable "worker_max_connections" {
  description = "A worker's --max-connections: the most connections one worker owns. At most 10,000, so that handing them all over fits well inside the worker's 60 s stop timeout (1,000 take 0.4 to 0.7 s on DynamoDB)."
  type        = number
  default     = 1000

  validation {
    condition     = var.worker_max_connections >= 1 && var.worker_max_connections <= 10000
    error_message = "worker_max_connections must be 1..10000."
  }
}

variable "worker_target_connections" {
  description = "Autoscaling's target of STARTED connections per worker. Below worker_max_connections, so that the workers left when one stops can take its share: with N workers at the target, N-1 must hold them (target <= max * (N-1)/N)."
  type        = number
  default     = 500

  validation {
    condition     = var.worker_target_connections >= 1
    error_message = "worker_target_connections must be at least 1."
  }
}

variable "worker_stall_after" {
  description = "A worker's --stall-after: a connection without a message for this long counts as stalled, and a worker all of whose connections are stalled answers /healthz 503, so ECS replaces it after three failed checks. Raise it for upstreams that may be silent longer; \"0\" never counts a connection stalled."
  type        = string
  default     = "60s"

  validation {
    condition     = can(regex("^[0-9]+(ms|s|m|h)?$", var.worker_stall_after))
    error_message = "worker_stall_after must be a duration such as 60s, 5m or 0."
  }
}

variable "worker_sink" {
  description = "A worker's --sink. `stdout` sends each upstream message to the worker's log group; a jsonl:PATH sink is lost with the task's storage."
  type        = string
  default     = "stdout"
}

# ---------------------------------------------------------------- serve

variable "serve_cpu" {
  description = "CPU units of a `serve` task."
  type        = number
  default     = 1024
}

variable "serve_memory" {
  description = "Memory of a `serve` task, MiB."
  type        = number
  default     = 2048
}

variable "serve_desired_count" {
  description = "`serve` tasks started when the service is created."
  type        = number
  default     = 2
}

variable "serve_min_count" {
  description = "Fewest `serve` tasks (two keep the site up while one is replaced)."
  type        = number
  default     = 2

  validation {
    condition     = var.serve_min_count >= 1
    error_message = "serve_min_count must be at least 1."
  }
}

variable "serve_max_count" {
  description = "Most `serve` tasks (scaled on CPU)."
  type        = number
  default     = 6
}

variable "serve_cpu_target_percent" {
  description = "Autoscaling's target of `serve`'s average CPU utilisation."
  type        = number
  default     = 60
}

variable "upload_max" {
  description = "`serve --upload-max`: the largest movie upload."
  type        = string
  default     = "2GiB"
}

# ---------------------------------------------------------------- trace workers

variable "trace_worker_cpu" {
  description = "CPU units of a trace-worker task (tracing decodes video)."
  type        = number
  default     = 2048
}

variable "trace_worker_memory" {
  description = "Memory of a trace-worker task, MiB."
  type        = number
  default     = 4096
}

variable "trace_worker_desired_count" {
  description = "Trace-worker tasks started when the service is created."
  type        = number
  default     = 1
}

variable "trace_worker_min_count" {
  description = "Fewest trace-worker tasks. At least one: a task also probes uploads."
  type        = number
  default     = 1

  validation {
    condition     = var.trace_worker_min_count >= 1
    error_message = "trace_worker_min_count must be at least 1 (the probes of uploads run there)."
  }
}

variable "trace_worker_max_count" {
  description = "Most trace-worker tasks."
  type        = number
  default     = 10
}

variable "traces_per_task" {
  description = "`trace-worker --trace-workers`: traces one task runs at once."
  type        = number
  default     = 1

  validation {
    condition     = var.traces_per_task >= 1 && var.traces_per_task <= 64
    error_message = "traces_per_task must be 1..64."
  }
}

variable "trace_backlog_per_task" {
  description = "Autoscaling's target of trace jobs waiting in the queue per trace-worker task."
  type        = number
  default     = 2
}

variable "ephemeral_storage_gib" {
  description = "Task storage of `serve` and trace-worker tasks, GiB (21..200): uploads and the movies being read are copied there while in use."
  type        = number
  default     = 40

  validation {
    condition     = var.ephemeral_storage_gib >= 21 && var.ephemeral_storage_gib <= 200
    error_message = "ephemeral_storage_gib must be 21..200."
  }
}

# ---------------------------------------------------------------- observing

variable "metrics_namespace" {
  description = "CloudWatch namespace of the processes' metrics (--metrics-namespace: one embedded-metric-format line a minute on stdout)."
  type        = string
  default     = "Leasehold"
}

variable "log_retention_days" {
  description = "How long the log groups keep the processes' logs (and the worker's messages with the stdout sink)."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the periods CloudWatch Logs accepts."
  }
}

variable "alarm_topic_arn" {
  description = "SNS topic the alarms notify (on alarm and on recovery). Null: the alarms change state without notifying anyone."
  type        = string
  default     = null
}

variable "failover_p99_seconds" {
  description = "Alarm when the 99th percentile of the failover time users see (a taken-over connection's gap between its previous holder's last message and the taker's first) is above this over 5 minutes. A killed worker's connections move about a session ttl (3 s) after its last heartbeat."
  type        = number
  default     = 10
}

variable "http_5xx_percent" {
  description = "Alarm when more than this percentage of the requests `serve` answers are 5xx, for 3 of 5 minutes."
  type        = number
  default     = 1
}

# ---------------------------------------------------------------- safety

variable "deletion_protection" {
  description = "Protect the tables and the load balancer from deletion, and keep the bucket from being destroyed while it holds movies. Turn off only to tear a deployment down."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource that takes them."
  type        = map(string)
  default     = {}
}
