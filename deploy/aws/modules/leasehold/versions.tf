# The Terraform and AWS provider versions this module is written for.
#
# The module uses the provider's 5.x resource shapes (aws_s3_bucket_* split
# resources, aws_vpc_security_group_*_rule, metric math in target-tracking
# policies); 6.x renames data.aws_region's `name`, so it is excluded until
# the module is moved over.
terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 6.0"
    }
  }
}
