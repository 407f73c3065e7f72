# The ECS cluster the three services run in, on Fargate, with Container
# Insights on: it gives the per-service task counts (RunningTaskCount) that
# the workers' autoscaling divides the fleet's connections by
# (autoscaling.tf), and CPU and memory per task.

resource "aws_ecs_cluster" "this" {
  name = var.name

  setting {
    name  = "containerInsights"
    value = "enabled"
  }

  tags = local.tags
}

resource "aws_ecs_cluster_capacity_providers" "this" {
  cluster_name       = aws_ecs_cluster.this.name
  capacity_providers = ["FARGATE"]

  default_capacity_provider_strategy {
    capacity_provider = "FARGATE"
    weight            = 1
  }
}
