# An example root module: one region's leasehold deployment with the
# module's defaults, in a VPC that exists already. Copy it, change the
# values, then `terraform init && terraform apply` (deploy/aws/README.md).

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 6.0"
    }
  }
}

provider "aws" {
  region = "eu-west-1"

  default_tags {
    tags = {
      "app" = "leasehold"
    }
  }
}

module "leasehold" {
  source = "../modules/leasehold"

  name  = "prod"
  image = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/leasehold:0.1.0"

  vpc_id             = "vpc-0123456789abcdef0"
  private_subnet_ids = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"]
  public_subnet_ids  = ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"]
  certificate_arn    = "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
  domain_name        = "leasehold.example.com"

  # About 4,000 connections: 8 workers at the target of 500 each, up to 20.
  worker_min_count          = 2
  worker_desired_count      = 8
  worker_max_count          = 20
  worker_max_connections    = 1000
  worker_target_connections = 500

  alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:leasehold-alarms"
}

output "url" {
  value = module.leasehold.url
}

output "store_uri" {
  value = module.leasehold.store_uri
}

output "commands" {
  value = module.leasehold.commands
}
