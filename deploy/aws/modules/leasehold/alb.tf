# The load balancer in front of `serve`, and the security groups.
#
# HTTPS on 443 with the given certificate and a TLS 1.3 policy; HTTP on 80
# answers only a redirect to HTTPS. Requests go to `serve`'s tasks by their
# own addresses (target type ip, as awsvpc tasks need) on 8080, in plain
# HTTP inside the VPC (`serve --insecure-http`), and a task is in rotation
# while GET /healthz answers 200.
#
# Security groups: the load balancer takes 443 and 80 from
# alb_ingress_cidrs; `serve` takes 8080 from the load balancer only; the
# workers and trace workers take nothing. Every task may reach anything
# outward: AWS's endpoints, and the workers' upstreams, which are wherever
# the connections' URLs point.

resource "aws_lb" "serve" {
  name                       = "${var.name}-leasehold"
  load_balancer_type         = "application"
  internal                   = false
  subnets                    = var.public_subnet_ids
  security_groups            = [aws_security_group.alb.id]
  drop_invalid_header_fields = true
  enable_deletion_protection = var.deletion_protection
  # Below serve's idle keep-alive (60 s): the load balancer closes an idle
  # connection to serve before serve does, so it never sends a request on a
  # connection serve is closing (which the client would see as a 502).
  idle_timeout = 55
  tags         = local.tags
}

resource "aws_lb_target_group" "serve" {
  name        = "${var.name}-serve"
  port        = local.serve_port
  protocol    = "HTTP"
  target_type = "ip"
  vpc_id      = var.vpc_id
  # How long a task being stopped keeps its requests in flight before ECS
  # sends it SIGTERM: longer than serve's own 5 s drain, and shorter than
  # its stop timeout (30 s), so that a request the load balancer still lets
  # finish is one serve would have let finish too.
  deregistration_delay = 15

  health_check {
    path                = local.health_check.path
    port                = local.serve_port
    protocol            = "HTTP"
    matcher             = "200"
    interval            = 10
    timeout             = 5
    healthy_threshold   = 2
    unhealthy_threshold = 3
  }

  tags = local.tags
}

resource "aws_lb_listener" "https" {
  load_balancer_arn = aws_lb.serve.arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = var.ssl_policy
  certificate_arn   = var.certificate_arn

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.serve.arn
  }

  tags = local.tags
}

resource "aws_lb_listener" "http_redirect" {
  load_balancer_arn = aws_lb.serve.arn
  port              = 80
  protocol          = "HTTP"

  default_action {
    type = "redirect"

    redirect {
      protocol    = "HTTPS"
      port        = "443"
      status_code = "HTTP_301"
    }
  }

  tags = local.tags
}

# ---------------------------------------------------------------- security groups

resource "aws_security_group" "alb" {
  name        = "${var.name}-leasehold-alb"
  description = "The load balancer of leasehold serve: HTTPS and HTTP in, serve out"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "alb_https" {
  for_each          = toset(var.alb_ingress_cidrs)
  security_group_id = aws_security_group.alb.id
  description       = "HTTPS"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_ingress_rule" "alb_http" {
  for_each          = toset(var.alb_ingress_cidrs)
  security_group_id = aws_security_group.alb.id
  description       = "HTTP, redirected to HTTPS"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_egress_rule" "alb_to_serve" {
  security_group_id            = aws_security_group.alb.id
  description                  = "Requests and health checks to serve"
  ip_protocol                  = "tcp"
  from_port                    = local.serve_port
  to_port                      = local.serve_port
  referenced_security_group_id = aws_security_group.serve.id
}

resource "aws_security_group" "serve" {
  name        = "${var.name}-leasehold-serve"
  description = "leasehold serve: 8080 from the load balancer only"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "serve_from_alb" {
  security_group_id            = aws_security_group.serve.id
  description                  = "From the load balancer"
  ip_protocol                  = "tcp"
  from_port                    = local.serve_port
  to_port                      = local.serve_port
  referenced_security_group_id = aws_security_group.alb.id
}

resource "aws_vpc_security_group_egress_rule" "serve_all" {
  security_group_id = aws_security_group.serve.id
  description       = "AWS endpoints"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_security_group" "egress_only" {
  name        = "${var.name}-leasehold-workers"
  description = "leasehold worker and trace-worker: nothing in, everything out"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

resource "aws_vpc_security_group_egress_rule" "workers_all" {
  security_group_id = aws_security_group.egress_only.id
  description       = "AWS endpoints and the connections' upstreams"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}
