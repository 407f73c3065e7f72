// The Terraform deployment (deploy/aws/) held against the binary it deploys.
//
// No provider can be downloaded where the tests run, so `terraform validate`
// and `plan` cannot be the test. Instead every .tf file is parsed with
// @cdktf/hcl2json (pinned in package-lock.json) and what the module says is
// checked against what the built `leasehold` says of itself:
//
// - the DynamoDB tables (names, keys, attribute types, indexes, projections,
//   streams, on-demand, point-in-time recovery) equal the CreateTable
//   requests of `leasehold store schema --json`, none missing, none extra;
// - the SQS queues, their dead-letter queues and redrive equal the schema's;
//   the bucket is private, encrypted, unversioned and aborts incomplete
//   multipart uploads;
// - each task role grants exactly the (action, resource) pairs the schema
//   lists for its process, on the right ARNs, and nothing else;
// - every flag of a task's command, and of the `leasehold` commands the
//   outputs give the operator, is one `leasehold <command> --help` or
//   `leasehold --help` lists, every required one is given, and the store
//   comes in the environment variable --help names;
// - ports, health check paths and stop timeouts agree: serve's --listen,
//   its containerPort, the target group and its health check; /healthz on
//   the right port in every container; stop timeouts within Fargate's 120 s
//   and above what the processes need; Container Insights on; rolling
//   deployments without a gap; the alarms and autoscaling read metrics
//   that a process writes; the example calls the module with its
//   variables; deploy/aws/README.md names every input and output;
// - `terraform fmt -check` passes, where terraform is on PATH; and, where a
//   local provider mirror holds hashicorp/aws (LEASEHOLD_TF_PLUGIN_MIRROR,
//   else /opt/tf-plugins or terraform's own plugin folders), the example
//   plans under `terraform test` with the provider mocked (no credentials,
//   no AWS), and what the plan would send (the rendered commands, ports,
//   health checks, policies, names) is checked against the binary once
//   more. Each is skipped otherwise, saying so.
//
// With --planted, each check is instead shown to catch a mistake: every
// planted mistake (a dropped index, an extra or a missing IAM action, an
// unknown flag, a wrong health path, a wrong port, ...) is applied to a copy
// of the parsed module and the checks must fail naming it.
//
//   node tests/deploy/terraform_check.mjs build/bin/leasehold [--planted]
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
let parseHcl;
try {
  ({ parse: parseHcl } = require('@cdktf/hcl2json'));
} catch (e) {
  console.log(`FAILED  @cdktf/hcl2json cannot be loaded (run scripts/setup.sh, which installs package-lock.json): ${e.message}`);
  process.exit(1);
}

const binary = process.argv[2];
assert.ok(binary && !binary.startsWith('--'),
  'usage: terraform_check.mjs PATH_TO_leasehold [--planted]');
const planted = process.argv.includes('--planted');

const repoRoot = resolvePath(dirname(fileURLToPath(import.meta.url)), '../..');
const deployDir = join(repoRoot, 'deploy/aws');
const moduleDir = join(deployDir, 'modules/leasehold');
const exampleDir = join(deployDir, 'example');

// What the processes need of their stop timeout (docs/benchmarks.md,
// "Handing over 1,000 connections on SIGTERM": 0.4 to 0.7 s on DynamoDB;
// docs/server.md, Limits: serve drains for 5 s).
const WORKER_RELEASE_SECONDS_PER_1000 = 0.7;
const STOP_MARGIN = 4;
const SERVE_DRAIN_SECONDS = 5;
const FARGATE_STOP_TIMEOUT_MAX = 120;
const HEALTH_PATH = '/healthz';

// ---------------------------------------------------------------- parsing

async function parseDir(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.tf')).sort();
  assert.ok(files.length > 0, `no .tf files in ${dir}`);
  const parsed = [];
  for (const file of files) {
    const path = join(dir, file);
    parsed.push({ file: relative(repoRoot, path), json: await parseHcl(file, readFileSync(path, 'utf8')) });
  }
  return parsed;
}

// A module as one object: locals merged, resources by type and name (each
// the body of the block), data sources, variables, outputs, module calls.
function moduleModel(parsedFiles) {
  const m = { files: parsedFiles.map((p) => p.file), locals: {}, resource: {}, data: {},
    variable: {}, output: {}, module: {} };
  for (const { json } of parsedFiles) {
    for (const block of json.locals ?? []) Object.assign(m.locals, block);
    for (const kind of ['resource', 'data']) {
      for (const [type, byName] of Object.entries(json[kind] ?? {})) {
        m[kind][type] ??= {};
        for (const [name, bodies] of Object.entries(byName)) m[kind][type][name] = bodies[0];
      }
    }
    for (const kind of ['variable', 'output', 'module']) {
      for (const [name, bodies] of Object.entries(json[kind] ?? {})) m[kind][name] = bodies[0];
    }
  }
  return m;
}

// The value of local.PATH (PATH like a.b or a["b"]), or undefined.
function localValue(locals, path) {
  const parts = [...path.matchAll(/(?:^|\.)([A-Za-z_][\w-]*)|\["([^"]+)"\]/g)].map((x) => x[1] ?? x[2]);
  let value = locals;
  for (const part of parts) {
    if (value === null || typeof value !== 'object' || !(part in value)) return undefined;
    value = value[part];
  }
  return value;
}

// A value with every ${local.X} that names a literal replaced by it: a
// string that is one such reference becomes the literal itself (a number
// stays a number); references to anything else are left as written.
function resolve(value, locals, depth = 0) {
  if (typeof value !== 'string' || depth > 8) return value;
  const whole = value.match(/^\$\{local\.([\w.\-"[\]]+)\}$/);
  if (whole) {
    const v = localValue(locals, whole[1]);
    if (v !== undefined && (typeof v !== 'object' || v === null)) return resolve(v, locals, depth + 1);
    return value;
  }
  const out = value.replace(/\$\{local\.([\w.\-"[\]]+)\}/g, (ref, path) => {
    const v = localValue(locals, path);
    return typeof v === 'string' || typeof v === 'number' ? String(v) : ref;
  });
  return out === value ? value : resolve(out, locals, depth + 1);
}

const blocks = (body, name) => body?.[name] ?? [];
const sameSet = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
const list = (xs) => [...xs].sort().join(', ') || '(none)';

// ---------------------------------------------------------------- the binary

// The help's defaults must not depend on the caller's store.
const binaryEnv = { ...process.env };
delete binaryEnv.LEASEHOLD_STORE;

function run(args) {
  const r = spawnSync(binary, args, { encoding: 'utf8', env: binaryEnv });
  if (r.error) throw new Error(`\`leasehold ${args.join(' ')}\` did not run: ${r.error.message}`);
  if (r.status !== 0) {
    const how = r.signal ? `was killed by ${r.signal}` : `exited ${r.status}`;
    throw new Error(`\`leasehold ${args.join(' ')}\` ${how}: ${(r.stderr || r.stdout || '').trim()}`);
  }
  return r.stdout;
}

// A CLI11 help text: `options`, name -> { value: takes a value, required,
// env: the environment variable it reads }, and `positionals`, how many
// positional arguments the command takes.
function helpText(text) {
  const options = new Map();
  const section = text.match(/^Positionals:\n((?:.+\n)+)/m)?.[1] ?? '';
  const positionals = section.split('\n').filter((l) => /^ {2}\S/.test(l)).length;
  for (const line of text.split('\n')) {
    const m = line.match(/^\s+(?:-\w,)?(--[A-Za-z0-9][\w-]*)(?: ([A-Z]+)\S*)?(?:.*?( REQUIRED))?(?:.*\(Env:(\w+)\))?/);
    if (!m) continue;
    options.set(m[1], { value: m[2] !== undefined, required: m[3] !== undefined, env: m[4] });
  }
  return { options, positionals };
}

// The schema, and the options of `leasehold --help` and of each command
// (a path such as "worker" or "conn add") in `commands`.
function readBinary(commands) {
  const schema = JSON.parse(run(['store', 'schema', '--json']));
  const global = helpText(run(['--help'])).options;
  const sub = new Map();
  for (const path of commands) sub.set(path, helpText(run([...path.split(' '), '--help'])));
  return { schema, global, sub };
}

// The command path of `leasehold ARGS...`: its first word, or its first two
// when the first is a group of commands (store, user, conn, lease, bench).
const GROUPS = new Set(['store', 'user', 'conn', 'lease', 'bench']);
const commandPath = (args) => (GROUPS.has(args[0]) ? args.slice(0, 2) : args.slice(0, 1)).join(' ');

// Every flag of ARGS (a command line after `leasehold`) is one the command's
// help or the global help lists, with a value where it takes one; returns
// the mistakes, each starting with `where`.
function checkFlags(where, args, b) {
  const errors = [];
  const path = commandPath(args);
  const help = b.sub.get(path);
  if (!help) return [`${where}: \`leasehold ${path}\` is not a command this test read the help of`];
  const given = new Set();
  let positionals = 0;
  for (let i = path.split(' ').length; i < args.length; i += 1) {
    const token = String(args[i]);
    if (!token.startsWith('-')) {
      positionals += 1;
      if (positionals > help.positionals) {
        errors.push(`${where}: ${token} is neither a flag, a flag's value nor one of the ${help.positionals} positional arguments of \`leasehold ${path}\``);
      }
      continue;
    }
    const flag = token.split('=')[0];
    const option = help.options.get(flag) ?? b.global.get(flag);
    if (!option) {
      errors.push(`${where}: ${flag} is not a flag of \`leasehold ${path} --help\` or \`leasehold --help\``);
      // Its value, if it has one, is not a mistake of its own.
      if (!token.includes('=') && args[i + 1] !== undefined && !String(args[i + 1]).startsWith('-')) i += 1;
      continue;
    }
    given.add(flag);
    if (option.value && !token.includes('=')) {
      const value = args[i + 1];
      if (value === undefined || String(value).startsWith('--')) errors.push(`${where}: ${flag} has no value`);
      i += 1;
    }
  }
  for (const [flag, o] of help.options) {
    if (o.required && !given.has(flag)) errors.push(`${where}: lacks ${flag}, which \`leasehold ${path} --help\` says is required`);
  }
  return errors;
}

// The `leasehold` command lines of output.commands: the words after
// "leasehold", quotes removed.
function operatorCommands(m) {
  const out = [];
  for (const [name, line] of Object.entries(m.output.commands?.value ?? {})) {
    const at = String(line).match(/(?:^|\s)leasehold\s+(.*)$/);
    if (!at) continue;
    const words = [...at[1].matchAll(/'([^']*)'|(\S+)/g)].map((w) => w[1] ?? w[2]);
    out.push({ name, args: words });
  }
  return out;
}

// ---------------------------------------------------------------- checks
//
// Each check takes the module (m) and what the binary says (b), and returns
// the mistakes it finds, as sentences that name what is wrong.

function checkTables(m, b) {
  const errors = [];
  const L = m.locals;
  if (L.table_prefix !== '${var.name}_') errors.push(`local.table_prefix is ${L.table_prefix}, not \${var.name}_`);
  if (L.store_uri !== 'dynamodb://${local.region}/${local.table_prefix}') {
    errors.push(`local.store_uri is ${L.store_uri}, not dynamodb://\${local.region}/\${local.table_prefix}`);
  }
  const tfTables = new Map();
  for (const [res, t] of Object.entries(m.resource.aws_dynamodb_table ?? {})) {
    const name = String(t.name).replace(/^\$\{local\.table_prefix\}/, '');
    if (name === t.name) errors.push(`table ${res}: its name ${t.name} does not start with \${local.table_prefix}`);
    tfTables.set(name, { res, t });
  }
  for (const want of b.schema.tables) {
    const name = want.TableName;
    const found = tfTables.get(name);
    if (!found) {
      errors.push(`table ${name}: missing (store init creates it)`);
      continue;
    }
    tfTables.delete(name);
    const { t } = found;
    const where = `table ${name}`;
    if (t.billing_mode !== want.BillingMode) errors.push(`${where}: billing_mode ${t.billing_mode}, not ${want.BillingMode}`);
    const keys = Object.fromEntries(want.KeySchema.map((k) => [k.KeyType, k.AttributeName]));
    if (t.hash_key !== keys.HASH) errors.push(`${where}: hash_key ${t.hash_key}, not ${keys.HASH}`);
    if ((t.range_key ?? undefined) !== keys.RANGE) errors.push(`${where}: range_key ${t.range_key}, not ${keys.RANGE}`);
    const attrs = blocks(t, 'attribute').map((a) => `${a.name}:${a.type}`);
    const wantAttrs = want.AttributeDefinitions.map((a) => `${a.AttributeName}:${a.AttributeType}`);
    if (!sameSet(attrs, wantAttrs)) errors.push(`${where}: attributes ${list(attrs)}, not ${list(wantAttrs)}`);
    errors.push(...checkIndexes(where, blocks(t, 'global_secondary_index'), want.GlobalSecondaryIndexes ?? []));
    const stream = want.StreamSpecification;
    if (stream?.StreamEnabled) {
      if (t.stream_enabled !== true) errors.push(`${where}: stream_enabled is not true (store init turns its stream on)`);
      if (t.stream_view_type !== stream.StreamViewType) {
        errors.push(`${where}: stream_view_type ${t.stream_view_type}, not ${stream.StreamViewType}`);
      }
    } else if (t.stream_enabled === true) {
      errors.push(`${where}: has a stream, which store init does not make`);
    }
    if (blocks(t, 'point_in_time_recovery')[0]?.enabled !== true) errors.push(`${where}: point_in_time_recovery is not enabled`);
  }
  for (const [name, { res }] of tfTables) errors.push(`table ${name} (aws_dynamodb_table.${res}): extra, store init makes no such table`);
  return errors;
}

function checkIndexes(where, have, want) {
  const errors = [];
  const byName = new Map(have.map((g) => [g.name, g]));
  for (const w of want) {
    const g = byName.get(w.IndexName);
    if (!g) {
      errors.push(`${where}: index ${w.IndexName} missing`);
      continue;
    }
    byName.delete(w.IndexName);
    const keys = Object.fromEntries(w.KeySchema.map((k) => [k.KeyType, k.AttributeName]));
    const at = `${where}: index ${w.IndexName}`;
    if (g.hash_key !== keys.HASH) errors.push(`${at}: hash_key ${g.hash_key}, not ${keys.HASH}`);
    if ((g.range_key ?? undefined) !== keys.RANGE) errors.push(`${at}: range_key ${g.range_key}, not ${keys.RANGE}`);
    if (g.projection_type !== w.Projection.ProjectionType) {
      errors.push(`${at}: projection_type ${g.projection_type}, not ${w.Projection.ProjectionType}`);
    }
    const nonKey = g.non_key_attributes ?? [];
    const wantNonKey = w.Projection.NonKeyAttributes ?? [];
    if (!sameSet(nonKey, wantNonKey)) errors.push(`${at}: non_key_attributes ${list(nonKey)}, not ${list(wantNonKey)}`);
  }
  for (const name of byName.keys()) errors.push(`${where}: index ${name} extra, store init makes no such index`);
  return errors;
}

function checkQueues(m, b) {
  const errors = [];
  const L = m.locals;
  if (L.queue_uri !== 'sqs://${local.region}/${var.name}') errors.push(`local.queue_uri is ${L.queue_uri}, not sqs://\${local.region}/\${var.name}`);
  const byName = new Map();
  for (const [res, q] of Object.entries(m.resource.aws_sqs_queue ?? {})) {
    byName.set(String(q.name).replace(/^\$\{var\.name\}-/, ''), { res, q });
  }
  for (const want of b.schema.queues) {
    const main = byName.get(want.name);
    const dead = byName.get(want.dead_letter_queue);
    if (!main) errors.push(`queue \${var.name}-${want.name}: missing`);
    if (!dead) errors.push(`queue \${var.name}-${want.dead_letter_queue}: missing (the dead letters of ${want.name})`);
    byName.delete(want.name);
    byName.delete(want.dead_letter_queue);
    if (!main || !dead) continue;
    const retention = resolve(dead.q.message_retention_seconds, L);
    if (retention !== want.dead_letter_retention_seconds) {
      errors.push(`queue ${want.dead_letter_queue}: message_retention_seconds ${retention}, not ${want.dead_letter_retention_seconds}`);
    }
    const ref = String(main.q.redrive_policy ?? '').match(/^\$\{jsonencode\(local\.([\w.\-"[\]]+)\)\}$/);
    const policy = ref ? localValue(L, ref[1]) : undefined;
    if (!policy) {
      errors.push(`queue ${want.name}: redrive_policy is not jsonencode(local.…) of a policy this test can read`);
      continue;
    }
    if (policy.deadLetterTargetArn !== `\${aws_sqs_queue.${dead.res}.arn}`) {
      errors.push(`queue ${want.name}: redrives to ${policy.deadLetterTargetArn}, not aws_sqs_queue.${dead.res} (${want.dead_letter_queue})`);
    }
    const receives = resolve(policy.maxReceiveCount, L);
    if (receives !== want.max_receive_count) errors.push(`queue ${want.name}: maxReceiveCount ${receives}, not ${want.max_receive_count}`);
    if (dead.q.redrive_policy) errors.push(`queue ${want.dead_letter_queue}: a dead-letter queue with a redrive policy of its own`);
  }
  for (const [name, { res }] of byName) errors.push(`queue ${name} (aws_sqs_queue.${res}): extra, store init makes no such queue`);
  return errors;
}

function checkBucket(m) {
  const errors = [];
  const R = m.resource;
  const buckets = Object.keys(R.aws_s3_bucket ?? {});
  if (buckets.length !== 1) return [`bucket: ${buckets.length} aws_s3_bucket resources, not 1`];
  const id = `\${aws_s3_bucket.${buckets[0]}.id}`;
  const forBucket = (type) => Object.values(R[type] ?? {}).filter((r) => r.bucket === id);
  const pab = forBucket('aws_s3_bucket_public_access_block')[0];
  for (const flag of ['block_public_acls', 'block_public_policy', 'ignore_public_acls', 'restrict_public_buckets']) {
    if (pab?.[flag] !== true) errors.push(`bucket: public access block ${flag} is not true`);
  }
  const sse = blocks(blocks(forBucket('aws_s3_bucket_server_side_encryption_configuration')[0], 'rule')[0],
    'apply_server_side_encryption_by_default')[0];
  if (!['AES256', 'aws:kms', 'aws:kms:dsse'].includes(sse?.sse_algorithm)) errors.push('bucket: no default encryption');
  for (const v of forBucket('aws_s3_bucket_versioning')) {
    const status = blocks(v, 'versioning_configuration')[0]?.status;
    if (status !== 'Disabled') errors.push(`bucket: versioning is ${status}, not off`);
  }
  if (blocks(R.aws_s3_bucket[buckets[0]], 'versioning')[0]?.enabled === true) errors.push('bucket: versioning is Enabled, not off');
  const rules = forBucket('aws_s3_bucket_lifecycle_configuration').flatMap((c) => blocks(c, 'rule'));
  const abort = rules.find((r) => r.status === 'Enabled' && blocks(r, 'abort_incomplete_multipart_upload')[0]);
  if (!abort) {
    errors.push('bucket: no enabled lifecycle rule aborts incomplete multipart uploads');
  } else {
    const prefix = blocks(abort, 'filter')[0]?.prefix;
    if (prefix !== undefined && prefix !== '${local.media_prefix}' && prefix !== '') {
      errors.push(`bucket: the rule aborting incomplete uploads covers ${prefix}, not the movies (\${local.media_prefix})`);
    }
  }
  const media = m.locals.media_uri;
  if (media !== 's3://${local.bucket_name}/${local.media_prefix}?region=${local.region}') {
    errors.push(`local.media_uri is ${media}, not s3://\${local.bucket_name}/\${local.media_prefix}?region=\${local.region}`);
  }
  if (m.locals.bucket_name === undefined || R.aws_s3_bucket[buckets[0]].bucket !== '${local.bucket_name}') {
    errors.push('bucket: its name is not local.bucket_name, which the media URI names');
  }
  return errors;
}

// The ARNs each kind of resource (the schema's `on`) must be: what the
// processes send their requests to.
function expectedResources(m, b) {
  const tables = Object.keys(m.resource.aws_dynamodb_table ?? {});
  const streamed = new Set(b.schema.tables.filter((t) => t.StreamSpecification?.StreamEnabled).map((t) => t.TableName));
  const streamRes = Object.entries(m.resource.aws_dynamodb_table ?? {})
    .filter(([, t]) => streamed.has(String(t.name).replace(/^\$\{local\.table_prefix\}/, ''))).map(([r]) => r);
  const queueNames = new Set(b.schema.queues.map((q) => q.name));
  const queues = Object.entries(m.resource.aws_sqs_queue ?? {})
    .filter(([, q]) => queueNames.has(String(q.name).replace(/^\$\{var\.name\}-/, ''))).map(([r]) => r);
  const bucket = Object.keys(m.resource.aws_s3_bucket ?? {})[0];
  return {
    tables: tables.map((r) => `\${aws_dynamodb_table.${r}.arn}`),
    indexes: tables.map((r) => `\${aws_dynamodb_table.${r}.arn}/index/*`),
    streams: streamRes.map((r) => `\${aws_dynamodb_table.${r}.arn}/stream/*`),
    queues: queues.map((r) => `\${aws_sqs_queue.${r}.arn}`),
    objects: [`\${aws_s3_bucket.${bucket}.arn}/\${local.media_prefix}*`],
    bucket: [`\${aws_s3_bucket.${bucket}.arn}`],
  };
}

// local.grant_resources[kind] as a list of ARN expressions: a list, a
// reference to another local list, or [for x in local.L : "${x}/suffix"].
function grantArns(L, value) {
  if (Array.isArray(value)) return value;
  const ref = String(value).match(/^\$\{local\.([\w.]+)\}$/);
  if (ref && Array.isArray(localValue(L, ref[1]))) return localValue(L, ref[1]);
  const each = String(value).match(/^\$\{\[for (\w+) in local\.([\w.]+) : "\$\{\1\}([^"]*)"\]\}$/);
  if (each && Array.isArray(localValue(L, each[2]))) return localValue(L, each[2]).map((arn) => `${arn}${each[3]}`);
  return undefined;
}

function checkIam(m, b) {
  const errors = [];
  const L = m.locals;
  const grants = L.task_grants ?? {};
  const processes = Object.keys(b.schema.processes);
  if (!sameSet(Object.keys(grants), processes)) {
    errors.push(`iam: local.task_grants is for ${list(Object.keys(grants))}, not the processes ${list(processes)}`);
  }
  for (const process of processes) {
    const want = new Set(b.schema.processes[process].map((p) => `${p.action} on ${p.on}`));
    const have = new Set(Object.entries(grants[process] ?? {}).flatMap(([on, actions]) => actions.map((a) => `${a} on ${on}`)));
    for (const p of want) if (!have.has(p)) errors.push(`iam: ${process} lacks ${p}, which it sends`);
    for (const p of have) if (!want.has(p)) errors.push(`iam: ${process} is granted ${p}, which it never sends`);
  }
  // Each kind of resource is exactly its ARNs.
  const expected = expectedResources(m, b);
  const kinds = new Set(Object.values(b.schema.processes).flatMap((ps) => ps.map((p) => p.on)));
  for (const kind of kinds) {
    if (!(kind in expected)) {
      errors.push(`iam: the schema names resources "${kind}", which this test does not know: teach it the ARNs`);
      continue;
    }
    const arns = grantArns(L, L.grant_resources?.[kind]);
    if (!arns) errors.push(`iam: local.grant_resources.${kind} is not a list this test can read`);
    else if (!sameSet(arns, expected[kind])) errors.push(`iam: ${kind} are ${list(arns)}, not ${list(expected[kind])}`);
  }
  for (const kind of Object.keys(L.grant_resources ?? {})) {
    if (!kinds.has(kind)) errors.push(`iam: local.grant_resources.${kind} is granted to no process`);
  }
  errors.push(...checkIamWiring(m));
  return errors;
}

// The grants reach the task roles, one policy per process, and nothing else
// is attached to those roles.
function checkIamWiring(m) {
  const errors = [];
  const doc = m.data.aws_iam_policy_document?.task;
  const statement = doc?.dynamic?.statement?.[0];
  const content = statement?.content?.[0];
  if (doc?.for_each !== '${local.task_grants}' || statement?.for_each !== '${each.value}' ||
      content?.actions !== '${statement.value}' ||
      content?.resources !== '${local.grant_resources[statement.key]}') {
    errors.push('iam: data.aws_iam_policy_document.task is not one statement per local.task_grants kind, on local.grant_resources');
  }
  const policy = m.resource.aws_iam_role_policy?.task;
  if (policy?.role !== '${aws_iam_role.task[each.key].id}' || policy?.policy !== '${data.aws_iam_policy_document.task[each.key].json}') {
    errors.push('iam: aws_iam_role_policy.task does not put each process\'s policy document on its task role');
  }
  const taskDef = m.resource.aws_ecs_task_definition?.service;
  if (taskDef?.task_role_arn !== '${aws_iam_role.task[each.key].arn}') {
    errors.push('iam: the task definitions do not take their task role from aws_iam_role.task[each.key]');
  }
  for (const type of ['aws_iam_role_policy', 'aws_iam_role_policy_attachment', 'aws_iam_policy_attachment']) {
    for (const [name, r] of Object.entries(m.resource[type] ?? {})) {
      if (type === 'aws_iam_role_policy' && name === 'task') continue;
      if (JSON.stringify(r).includes('aws_iam_role.task')) errors.push(`iam: ${type}.${name} grants the task roles more`);
    }
  }
  return errors;
}

// The containers, as local.containers describes them.
function containers(m) {
  return Object.entries(m.locals.containers ?? {});
}

function checkCommands(m, b) {
  const errors = [];
  const L = m.locals;
  if (m.resource.aws_ecs_task_definition?.service?.container_definitions !== '${jsonencode([each.value])}' ||
      m.resource.aws_ecs_task_definition?.service?.for_each !== '${local.containers}') {
    errors.push('services: the task definitions are not jsonencode([each.value]) of local.containers');
  }
  const storeEnv = [...b.global.values()].find((o) => o.env)?.env;
  for (const [key, c] of containers(m)) {
    const command = (c.command ?? []).map((x) => resolve(x, L));
    const sub = command[0];
    const where = `${key}: command`;
    if (sub !== key) errors.push(`${where} runs \`leasehold ${sub}\`, not ${key}`);
    errors.push(...checkFlags(where, command, b));
    const env = Object.fromEntries((c.environment === '${local.environment}' ? L.environment : c.environment ?? [])
      .map((e) => [e.name, e.value]));
    if (!storeEnv) errors.push(`${key}: \`leasehold --help\` names no environment variable for the store`);
    else if (env[storeEnv] !== '${local.store_uri}') errors.push(`${key}: ${storeEnv} is ${env[storeEnv]}, not \${local.store_uri}`);
    for (const name of Object.keys(env).filter((n) => n.startsWith('LEASEHOLD_'))) {
      if (name !== storeEnv) errors.push(`${key}: ${name} is not an environment variable \`leasehold --help\` names`);
    }
  }
  // serve and the trace workers share the media and the queues.
  const flagValue = (key, flag) => {
    const cmd = L.containers?.[key]?.command ?? [];
    const i = cmd.indexOf(flag);
    return i < 0 ? undefined : cmd[i + 1];
  };
  for (const key of ['serve', 'trace-worker']) {
    if (flagValue(key, '--media-dir') !== '${local.media_uri}') errors.push(`${key}: --media-dir is not \${local.media_uri}`);
    if (flagValue(key, '--queue') !== '${local.queue_uri}') errors.push(`${key}: --queue is not \${local.queue_uri}`);
  }
  // The commands the outputs give the operator.
  for (const { name, args } of operatorCommands(m)) errors.push(...checkFlags(`output commands.${name}`, args, b));
  return errors;
}

const portOf = (address) => Number(String(address).split(':').pop());

function checkPortsAndHealth(m) {
  const errors = [];
  const L = m.locals;
  const R = m.resource;
  const flag = (c, name) => {
    const cmd = (c.command ?? []).map((x) => resolve(x, L));
    const i = cmd.indexOf(name);
    return i < 0 ? undefined : cmd[i + 1];
  };
  const serve = L.containers?.serve;
  const listen = serve && flag(serve, '--listen');
  const servePort = portOf(listen);
  if (!listen || !(servePort > 0)) errors.push(`serve: --listen ${listen} names no port`);
  const mapped = (serve?.portMappings ?? []).map((p) => resolve(p.containerPort, L));
  if (mapped.length !== 1 || mapped[0] !== servePort) errors.push(`serve: containerPort ${list(mapped)}, not --listen's port ${servePort}`);
  const tg = R.aws_lb_target_group?.serve;
  const hc = blocks(tg, 'health_check')[0];
  if (resolve(tg?.port, L) !== servePort) errors.push(`serve: the target group's port ${resolve(tg?.port, L)}, not ${servePort}`);
  if (tg?.target_type !== 'ip') errors.push(`serve: the target group's type ${tg?.target_type}, not ip (awsvpc tasks)`);
  const hcPort = resolve(hc?.port, L);
  if (!(hcPort === 'traffic-port' || Number(hcPort) === servePort)) {
    errors.push(`serve: the target group's health check port ${hcPort}, not ${servePort}`);
  }
  if (resolve(hc?.path, L) !== HEALTH_PATH) errors.push(`serve: the target group's health check path ${resolve(hc?.path, L)}, not ${HEALTH_PATH}`);
  const lb = blocks(R.aws_ecs_service?.serve, 'load_balancer')[0];
  if (resolve(lb?.container_port, L) !== servePort || lb?.container_name !== 'serve') {
    errors.push(`serve: the service's load_balancer is ${lb?.container_name}:${resolve(lb?.container_port, L)}, not serve:${servePort}`);
  }
  const ingress = Object.values(R.aws_vpc_security_group_ingress_rule ?? {})
    .filter((r) => r.security_group_id === '${aws_security_group.serve.id}');
  if (ingress.length !== 1 || resolve(ingress[0].from_port, L) !== servePort || resolve(ingress[0].to_port, L) !== servePort ||
      ingress[0].referenced_security_group_id !== '${aws_security_group.alb.id}') {
    errors.push(`serve: its security group does not take ${servePort} from the load balancer alone`);
  }
  for (const [key, c] of containers(m)) {
    let port = servePort;
    if (key !== 'serve') {
      const metrics = flag(c, '--metrics-listen');
      if (!metrics || !String(metrics).startsWith('127.0.0.1:')) errors.push(`${key}: --metrics-listen ${metrics} is not on 127.0.0.1`);
      port = portOf(metrics);
    }
    const want = ['CMD', 'curl', '-fsS', `http://127.0.0.1:${port}${HEALTH_PATH}`];
    const have = (c.healthCheck?.command ?? []).map((x) => resolve(x, L));
    if (JSON.stringify(have) !== JSON.stringify(want)) errors.push(`${key}: health check ${JSON.stringify(have)}, not ${JSON.stringify(want)}`);
    if (c.linuxParameters?.initProcessEnabled !== true) errors.push(`${key}: initProcessEnabled is not true`);
  }
  return errors;
}

function checkStopTimeouts(m) {
  const errors = [];
  const L = m.locals;
  const timeout = (key) => resolve(L.containers?.[key]?.stopTimeout, L);
  for (const [key] of containers(m)) {
    const t = timeout(key);
    if (!Number.isInteger(t) || t < 2 || t > FARGATE_STOP_TIMEOUT_MAX) {
      errors.push(`${key}: stopTimeout ${t} is not 2..${FARGATE_STOP_TIMEOUT_MAX} s`);
    }
  }
  // The most connections a worker may own: the variable's validated bound.
  const maxVar = m.variable.worker_max_connections;
  const bound = Number(JSON.stringify(maxVar?.validation ?? []).match(/var\.worker_max_connections <= (\d+)/)?.[1] ?? maxVar?.default);
  const workerNeeds = Math.max(10, STOP_MARGIN * WORKER_RELEASE_SECONDS_PER_1000 * (bound / 1000));
  if (!(timeout('worker') >= workerNeeds)) {
    errors.push(`worker: stopTimeout ${timeout('worker')} s is under ${workerNeeds} s, ${STOP_MARGIN} times the release of ${bound} connections`);
  }
  const serveStop = timeout('serve');
  if (!(serveStop >= 2 * SERVE_DRAIN_SECONDS)) errors.push(`serve: stopTimeout ${serveStop} s is under twice its ${SERVE_DRAIN_SECONDS} s drain`);
  const delay = resolve(m.resource.aws_lb_target_group?.serve?.deregistration_delay, L);
  if (!(delay > SERVE_DRAIN_SECONDS && delay < serveStop)) {
    errors.push(`serve: deregistration_delay ${delay} s is not between its ${SERVE_DRAIN_SECONDS} s drain and its ${serveStop} s stop timeout`);
  }
  return errors;
}

function checkCluster(m) {
  const errors = [];
  const R = m.resource;
  const clusters = Object.values(R.aws_ecs_cluster ?? {});
  if (clusters.length !== 1) errors.push(`cluster: ${clusters.length} clusters, not 1`);
  const insights = blocks(clusters[0], 'setting').find((s) => s.name === 'containerInsights')?.value;
  if (!['enabled', 'enhanced'].includes(insights)) errors.push(`cluster: Container Insights is ${insights}, not enabled`);
  const services = Object.entries(R.aws_ecs_service ?? {});
  const names = services.map(([, s]) => s.name);
  if (!sameSet(names, containers(m).map(([k]) => k))) errors.push(`services: ${list(names)}, not one per container`);
  for (const [, s] of services) {
    const at = `service ${s.name}`;
    if (s.task_definition !== `\${aws_ecs_task_definition.service["${s.name}"].arn}`) errors.push(`${at}: runs another task definition than its container's`);
    if (s.launch_type !== 'FARGATE') errors.push(`${at}: launch_type ${s.launch_type}, not FARGATE`);
    if (s.deployment_minimum_healthy_percent !== 100 || s.deployment_maximum_percent !== 200) {
      errors.push(`${at}: deploys at ${s.deployment_minimum_healthy_percent}..${s.deployment_maximum_percent} %, not 100..200 %`);
    }
    const breaker = blocks(s, 'deployment_circuit_breaker')[0];
    if (breaker?.enable !== true || breaker?.rollback !== true) errors.push(`${at}: no circuit breaker with rollback`);
  }
  const td = R.aws_ecs_task_definition?.service;
  if (td?.network_mode !== 'awsvpc' || JSON.stringify(td?.requires_compatibilities) !== '["FARGATE"]') {
    errors.push('task definitions: not Fargate with awsvpc');
  }
  const https = Object.values(R.aws_lb_listener ?? {}).find((l) => l.protocol === 'HTTPS');
  const policy = https?.ssl_policy === '${var.ssl_policy}' ? m.variable.ssl_policy?.default : https?.ssl_policy;
  if (https?.port !== 443 || !String(policy).startsWith('ELBSecurityPolicy-TLS13-')) {
    errors.push(`load balancer: no HTTPS listener on 443 with a TLS 1.3 policy (${policy})`);
  }
  const http = Object.values(R.aws_lb_listener ?? {}).find((l) => l.protocol === 'HTTP');
  const redirect = blocks(blocks(http, 'default_action')[0], 'redirect')[0];
  if (http && redirect?.protocol !== 'HTTPS') errors.push('load balancer: its HTTP listener does not redirect to HTTPS');
  return errors;
}

// The metrics the alarms, the autoscaling and the dashboard read come from
// processes that write them: namespace and Service as the commands give.
function checkMetrics(m) {
  const errors = [];
  const L = m.locals;
  const emitting = new Set();
  for (const [key, c] of containers(m)) {
    const cmd = c.command ?? [];
    const at = (f) => cmd[cmd.indexOf(f) + 1];
    if (cmd.includes('--metrics-format') && at('--metrics-format') === 'emf') {
      emitting.add(key);
      if (at('--metrics-namespace') !== '${var.metrics_namespace}') errors.push(`${key}: --metrics-namespace is not var.metrics_namespace`);
    }
  }
  const uses = [];
  for (const [name, a] of Object.entries(m.resource.aws_cloudwatch_metric_alarm ?? {})) {
    if (String(a.metric_name).startsWith('leasehold_')) uses.push({ at: `alarm ${name}`, ns: a.namespace, service: a.dimensions?.Service });
  }
  for (const [name, p] of Object.entries(m.resource.aws_appautoscaling_policy ?? {})) {
    const spec = blocks(blocks(p, 'target_tracking_scaling_policy_configuration')[0], 'customized_metric_specification')[0];
    for (const q of blocks(spec, 'metrics')) {
      const metric = blocks(blocks(q, 'metric_stat')[0], 'metric')[0];
      if (!String(metric?.metric_name).startsWith('leasehold_')) continue;
      const service = blocks(metric, 'dimensions').find((d) => d.name === 'Service')?.value;
      uses.push({ at: `autoscaling ${name}`, ns: metric.namespace, service });
    }
  }
  for (const u of uses) {
    if (u.ns !== '${var.metrics_namespace}') errors.push(`${u.at}: namespace ${u.ns}, not var.metrics_namespace`);
    if (!emitting.has(u.service)) errors.push(`${u.at}: reads Service=${u.service}, which writes no EMF metrics`);
  }
  if (L.ns !== undefined && L.ns !== '${var.metrics_namespace}') errors.push('dashboard: local.ns is not var.metrics_namespace');
  return errors;
}

function checkExample(example, m) {
  const errors = [];
  const calls = Object.entries(example.module);
  if (calls.length !== 1) return [`example: ${calls.length} module calls, not 1`];
  const [, call] = calls[0];
  if (call.source !== '../modules/leasehold') errors.push(`example: source ${call.source}, not ../modules/leasehold`);
  const args = Object.keys(call).filter((k) => !['source', 'version', 'providers', 'depends_on', 'count', 'for_each'].includes(k));
  for (const a of args) if (!(a in m.variable)) errors.push(`example: ${a} is not a variable of the module`);
  for (const [name, v] of Object.entries(m.variable)) {
    if (!('default' in v) && !args.includes(name)) errors.push(`example: lacks ${name}, which the module requires`);
  }
  for (const [name, v] of Object.entries(m.variable)) {
    if (!v.description) errors.push(`variable ${name}: no description`);
    if (!v.type) errors.push(`variable ${name}: no type`);
  }
  // deploy/aws/README.md names every input and output.
  for (const [kind, names] of [['input', Object.keys(m.variable)], ['output', Object.keys(m.output)]]) {
    for (const name of names) if (!m.readme.includes(`\`${name}\``)) errors.push(`README: the ${kind} ${name} is not named in deploy/aws/README.md`);
  }
  for (const [name, o] of Object.entries(example.output)) {
    const ref = String(o.value).match(/^\$\{module\.\w+\.(\w+)\}$/);
    if (ref && !(ref[1] in m.output)) errors.push(`example: output ${name} reads module output ${ref[1]}, which does not exist`);
  }
  return errors;
}

const CHECKS = [
  ['tables', checkTables],
  ['queues', checkQueues],
  ['bucket', (m) => checkBucket(m)],
  ['iam', checkIam],
  ['commands', checkCommands],
  ['ports and health', (m) => checkPortsAndHealth(m)],
  ['stop timeouts', (m) => checkStopTimeouts(m)],
  ['cluster and services', (m) => checkCluster(m)],
  ['metrics', (m) => checkMetrics(m)],
];

function runChecks(m, b, example) {
  const results = CHECKS.map(([name, check]) => [name, check(m, b)]);
  results.push(['example', checkExample(example, m)]);
  return results;
}

// ---------------------------------------------------------------- planted mistakes
//
// Each changes a copy of the parsed module (or of what the binary says) and
// names the error the checks must then report.

const PLANTED = [
  { name: 'an index dropped from connections',
    plant: (m) => { const t = m.resource.aws_dynamodb_table.connections; t.global_secondary_index = t.global_secondary_index.filter((g) => g.name !== 'lease_session-lease_epoch-index'); },
    expect: /table connections: index lease_session-lease_epoch-index missing/ },
  { name: 'a projection changed',
    plant: (m) => { m.resource.aws_dynamodb_table.connections.global_secondary_index.find((g) => g.name === 'desired_state-Pk-index').projection_type = 'ALL'; },
    expect: /index desired_state-Pk-index: projection_type ALL, not INCLUDE/ },
  { name: 'the connections stream turned off',
    plant: (m) => { delete m.resource.aws_dynamodb_table.connections.stream_enabled; },
    expect: /table connections: stream_enabled is not true/ },
  { name: 'a table the code adds, missing here',
    plant: (m, b) => { b.schema.tables.push({ ...b.schema.tables[0], TableName: 'new_table' }); },
    expect: /table new_table: missing/ },
  { name: 'point-in-time recovery off',
    plant: (m) => { m.resource.aws_dynamodb_table.movies.point_in_time_recovery = [{ enabled: false }]; },
    expect: /table movies: point_in_time_recovery is not enabled/ },
  { name: 'an extra IAM action',
    plant: (m) => { m.locals.task_grants.worker.tables.push('dynamodb:Scan'); },
    expect: /iam: worker is granted dynamodb:Scan on tables, which it never sends/ },
  { name: 'a needed IAM action removed',
    plant: (m) => { const q = m.locals.task_grants['trace-worker'].queues; q.splice(q.indexOf('sqs:ReceiveMessage'), 1); },
    expect: /iam: trace-worker lacks sqs:ReceiveMessage on queues/ },
  { name: 'an action the code starts to send',
    plant: (m, b) => { b.schema.processes.serve.push({ action: 'dynamodb:TransactWriteItems', on: 'tables' }); },
    expect: /iam: serve lacks dynamodb:TransactWriteItems on tables/ },
  { name: 'an action granted on the wrong resources',
    plant: (m) => { m.locals.grant_resources.streams = ['${aws_dynamodb_table.movies.arn}/stream/*']; },
    expect: /iam: streams are .*movies.*, not .*connections/ },
  { name: 'the task roles given a managed policy besides',
    plant: (m) => { m.resource.aws_iam_role_policy_attachment = { admin: { role: '${aws_iam_role.task["worker"].name}', policy_arn: 'arn:aws:iam::aws:policy/AdministratorAccess' } }; },
    expect: /iam: aws_iam_role_policy_attachment\.admin grants the task roles more/ },
  { name: 'an unknown flag',
    plant: (m) => { m.locals.containers.worker.command.push('--no-such-flag', 'x'); },
    expect: /worker: command: --no-such-flag is not a flag of `leasehold worker --help`/ },
  { name: 'a value after a flag that takes none',
    plant: (m) => { const c = m.locals.containers.serve.command; c.splice(c.indexOf('--insecure-http') + 1, 0, 'yes'); },
    expect: /serve: command: yes is neither a flag, a flag's value nor one of the 0 positional arguments/ },
  { name: 'an operator command with a flag the CLI lacks',
    plant: (m) => { m.output.commands.value.add_conn += ' --priority 1'; },
    expect: /output commands\.add_conn: --priority is not a flag of `leasehold conn add --help`/ },
  { name: 'a required flag the help names, not given',
    plant: (m, b) => { b.sub.get('trace-worker').options.set('--required-thing', { value: true, required: true }); },
    expect: /trace-worker: command: lacks --required-thing/ },
  { name: 'a wrong health path on the target group',
    plant: (m) => { m.resource.aws_lb_target_group.serve.health_check[0].path = '/health'; },
    expect: /serve: the target group's health check path \/health, not \/healthz/ },
  { name: 'a wrong health path in a container',
    plant: (m) => { m.locals.containers['trace-worker'].healthCheck.command[3] = 'http://127.0.0.1:9090/metrics'; },
    expect: /trace-worker: health check .*\/metrics.*, not .*\/healthz/ },
  { name: 'a wrong container port',
    plant: (m) => { m.locals.containers.serve.portMappings[0].containerPort = 8081; },
    expect: /serve: containerPort 8081, not --listen's port 8080/ },
  { name: 'a wrong target group port',
    plant: (m) => { m.resource.aws_lb_target_group.serve.port = 80; },
    expect: /serve: the target group's port 80, not 8080/ },
  { name: 'a worker health check on the wrong port',
    plant: (m) => { m.locals.containers.worker.healthCheck.command[3] = 'http://127.0.0.1:8080/healthz'; },
    expect: /worker: health check .*8080.*, not .*9090/ },
  { name: 'a worker stop timeout too short',
    plant: (m) => { m.locals.stop_timeout_seconds.worker = 5; },
    expect: /worker: stopTimeout 5 s is under/ },
  { name: 'a stop timeout past Fargate\'s 120 s',
    plant: (m) => { m.locals.stop_timeout_seconds['trace-worker'] = 300; },
    expect: /trace-worker: stopTimeout 300 is not 2\.\.120 s/ },
  { name: 'a deregistration delay past serve\'s stop timeout',
    plant: (m) => { m.resource.aws_lb_target_group.serve.deregistration_delay = 300; },
    expect: /serve: deregistration_delay 300 s is not between/ },
  { name: 'Container Insights off',
    plant: (m) => { Object.values(m.resource.aws_ecs_cluster)[0].setting[0].value = 'disabled'; },
    expect: /cluster: Container Insights is disabled/ },
  { name: 'versioning turned on',
    plant: (m) => { m.resource.aws_s3_bucket_versioning = { media: { bucket: '${aws_s3_bucket.media.id}', versioning_configuration: [{ status: 'Enabled' }] } }; },
    expect: /bucket: versioning is Enabled/ },
  { name: 'the lifecycle rule dropped',
    plant: (m) => { delete m.resource.aws_s3_bucket_lifecycle_configuration; },
    expect: /bucket: no enabled lifecycle rule aborts incomplete multipart uploads/ },
  { name: 'a variable the README does not name',
    plant: (m) => { m.variable.worker_colour = { description: 'x', type: '${string}', default: 'blue' }; },
    expect: /README: the input worker_colour is not named/ },
  { name: 'a redrive after 3 deliveries',
    plant: (m) => { m.locals.redrive.trace.maxReceiveCount = 3; },
    expect: /queue movie-trace: maxReceiveCount 3, not 5/ },
  { name: 'a redrive to the wrong dead-letter queue',
    plant: (m) => { m.locals.redrive.probe.deadLetterTargetArn = '${aws_sqs_queue.trace_dead.arn}'; },
    expect: /queue movie-probe: redrives to .*trace_dead/ },
];

// ---------------------------------------------------------------- terraform itself

function onPath(name) {
  return (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, name)));
}

function terraformFmt() {
  if (!onPath('terraform')) return 'skipped: terraform is not on PATH';
  const r = spawnSync('terraform', ['fmt', '-check', '-recursive', '-diff', deployDir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`terraform fmt -check found files to format:\n${r.stdout}${r.stderr}`);
  return 'terraform fmt -check: every file formatted';
}

// A filesystem mirror with the AWS provider, or undefined.
function providerMirror() {
  const candidates = [process.env.LEASEHOLD_TF_PLUGIN_MIRROR, '/opt/tf-plugins',
    join(homedir(), '.terraform.d/plugins'), '/usr/local/share/terraform/plugins', '/usr/share/terraform/plugins'];
  return candidates.find((d) => d && existsSync(join(d, 'registry.terraform.io/hashicorp/aws')));
}

// The example planned with `terraform test` and a mocked AWS provider: no
// credentials, no AWS, but every expression of the module is evaluated with
// the example's values, every variable's validation and every precondition
// run, and the plan says what ECS, IAM, DynamoDB and SQS would be sent.
const MOCKED_PLAN_TEST = `# Written by tests/deploy/terraform_check.mjs in a copy of deploy/aws.
mock_provider "aws" {
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  # A policy document's JSON is made by the provider, which a mock does not
  # run: an empty object stands for it.
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
}

run "plan" {
  command = plan
}
`;

function terraformPlan() {
  if (!onPath('terraform')) return { skipped: 'skipped: terraform is not on PATH' };
  const mirror = providerMirror();
  if (!mirror) return { skipped: 'skipped: no provider mirror with hashicorp/aws (set LEASEHOLD_TF_PLUGIN_MIRROR)' };
  const work = mkdtempSync(join(tmpdir(), 'leasehold-tf-'));
  try {
    cpSync(deployDir, join(work, 'aws'), { recursive: true });
    const config = join(work, 'terraformrc');
    writeFileSync(config, `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(mirror)}\n  }\n  direct {\n    exclude = ["registry.terraform.io/*/*"]\n  }\n}\n`);
    const cwd = join(work, 'aws/example');
    writeFileSync(join(cwd, 'mocked.tftest.hcl'), MOCKED_PLAN_TEST);
    const env = { ...process.env, TF_CLI_CONFIG_FILE: config, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
    const init = spawnSync('terraform', ['init', '-backend=false', '-input=false', '-no-color'], { cwd, env, encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`terraform init failed:\n${init.stdout}${init.stderr}`);
    const test = spawnSync('terraform', ['test', '-verbose', '-json', '-no-color'], { cwd, env, encoding: 'utf8', maxBuffer: 1 << 30 });
    const events = test.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const plan = events.find((e) => e.type === 'test_plan')?.test_plan;
    if (test.status !== 0 || !plan) {
      const why = events.filter((e) => e['@level'] === 'error').map((e) => e['@message']);
      throw new Error(`terraform test (a plan of the example, the provider mocked) failed:\n  ${why.join('\n  ') || test.stderr}`);
    }
    return { mirror, plan };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// What the plan would send, against the binary: the rendered commands, the
// ports and health checks, the task roles' actions, the tables' and queues'
// names. These read the values Terraform computed, not the .tf text, so they
// also stand behind this test's reading of the text.
function checkPlan(plan, b) {
  const errors = [];
  const after = new Map(plan.resource_changes.map((r) => [r.address.replace(/^module\.\w+\./, ''), r.change.after]));
  const output = (name) => plan.output_changes?.[name]?.after;
  const container = (process) =>
    JSON.parse(after.get(`aws_ecs_task_definition.service["${process}"]`)?.container_definitions ?? '[{}]')[0];
  const serveCommand = container('serve').command ?? [];
  // The store URI as the example outputs it; the queue URI as serve is given it.
  const storeUri = output('store_uri');
  const prefix = String(storeUri).split('/').pop();
  const queueName = String(serveCommand[serveCommand.indexOf('--queue') + 1]).split('/').pop();
  const names = (type) => [...after].filter(([a]) => a.startsWith(`${type}.`)).map(([, v]) => v.name);
  const wantTables = b.schema.tables.map((t) => `${prefix}${t.TableName}`);
  if (!sameSet(names('aws_dynamodb_table'), wantTables)) {
    errors.push(`plan: tables ${list(names('aws_dynamodb_table'))}, not ${list(wantTables)}`);
  }
  const wantQueues = b.schema.queues.flatMap((q) => [`${queueName}-${q.name}`, `${queueName}-${q.dead_letter_queue}`]);
  if (!sameSet(names('aws_sqs_queue'), wantQueues)) errors.push(`plan: queues ${list(names('aws_sqs_queue'))}, not ${list(wantQueues)}`);
  const tg = after.get('aws_lb_target_group.serve');
  for (const process of Object.keys(b.schema.processes)) {
    const c = container(process);
    const where = `plan: ${process}`;
    const command = c.command ?? [];
    errors.push(...checkFlags(`${where}: command`, command, b));
    const flag = (name) => command[command.indexOf(name) + 1];
    const port = portOf(process === 'serve' ? flag('--listen') : flag('--metrics-listen'));
    if (process === 'serve') {
      const ports = [c.portMappings?.[0]?.containerPort, tg?.port, Number(tg?.health_check?.[0]?.port)];
      if (!ports.every((p) => p === port)) errors.push(`${where}: --listen's port ${port}, but containerPort, target group and its health check ${ports.join(', ')}`);
      if (tg?.health_check?.[0]?.path !== HEALTH_PATH) errors.push(`${where}: the target group checks ${tg?.health_check?.[0]?.path}`);
    }
    if (c.healthCheck?.command?.[3] !== `http://127.0.0.1:${port}${HEALTH_PATH}`) errors.push(`${where}: health check ${c.healthCheck?.command}`);
    if (!(c.stopTimeout >= 2 && c.stopTimeout <= FARGATE_STOP_TIMEOUT_MAX)) errors.push(`${where}: stopTimeout ${c.stopTimeout}`);
    const env = Object.fromEntries((c.environment ?? []).map((e) => [e.name, e.value]));
    if (env.LEASEHOLD_STORE !== storeUri) errors.push(`${where}: LEASEHOLD_STORE ${env.LEASEHOLD_STORE}, not the output store_uri ${storeUri}`);
    // The statements' actions by their Sid, which names the kind of resource.
    const statements = after.get(`data.aws_iam_policy_document.task["${process}"]`)?.statement ?? [];
    const have = statements.flatMap((st) => st.actions.map((a) => `${a} on ${st.sid.toLowerCase()}`));
    const want = b.schema.processes[process].map((p) => `${p.action} on ${p.on}`);
    for (const p of want) if (!have.includes(p)) errors.push(`${where}: the task role's policy lacks ${p}`);
    for (const p of have) if (!want.includes(p)) errors.push(`${where}: the task role's policy grants ${p}, which it never sends`);
  }
  return errors;
}

// ---------------------------------------------------------------- main

// Every .tf file under deploy/aws, so that none escapes the checks.
function allTfFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name.startsWith('.') ? [] : allTfFiles(path);
    return e.name.endsWith('.tf') ? [path] : [];
  });
}

const started = Date.now();
const unchecked = allTfFiles(deployDir).filter((f) => ![moduleDir, exampleDir].includes(dirname(f)));
if (unchecked.length > 0) {
  console.log(`FAILED  .tf files this test does not read: ${unchecked.map((f) => relative(repoRoot, f)).join(', ')}`);
  process.exit(1);
}
const m = moduleModel(await parseDir(moduleDir));
m.readme = readFileSync(join(deployDir, 'README.md'), 'utf8');
const example = moduleModel(await parseDir(exampleDir));
const commands = new Set(containers(m).map(([, c]) => commandPath(c.command ?? [])).filter(Boolean));
for (const { args } of operatorCommands(m)) commands.add(commandPath(args));
const b = readBinary([...commands]);
console.log(`parsed ${m.files.length + example.files.length} files under deploy/aws; ` +
  `${b.schema.tables.length} tables, ${b.schema.queues.length} queues and the roles of ` +
  `${Object.keys(b.schema.processes).length} processes from \`leasehold store schema --json\`; ` +
  `the help of ${b.sub.size} commands (${[...b.sub.keys()].join(', ')})`);

if (!planted) {
  let failed = 0;
  for (const [name, errors] of runChecks(m, b, example)) {
    if (errors.length === 0) {
      console.log(`ok      ${name}`);
    } else {
      failed += errors.length;
      console.log(`FAILED  ${name}`);
      for (const e of errors) console.log(`        ${e}`);
    }
  }
  try {
    console.log(`ok      ${terraformFmt()}`);
  } catch (e) {
    failed += 1;
    console.log(`FAILED  ${e.message}`);
  }
  try {
    const { skipped, mirror, plan } = terraformPlan();
    const errors = skipped ? [] : checkPlan(plan, b);
    if (skipped) {
      console.log(`ok      terraform plan ${skipped}`);
    } else if (errors.length === 0) {
      console.log(`ok      terraform plan of the example (provider mocked, from ${mirror}): ` +
        `${plan.resource_changes.length} resources, what they would send agrees with the binary`);
    } else {
      failed += errors.length;
      console.log('FAILED  terraform plan of the example');
      for (const e of errors) console.log(`        ${e}`);
    }
  } catch (e) {
    failed += 1;
    console.log(`FAILED  ${e.message}`);
  }
  console.log(`${failed === 0 ? 'passed' : `${failed} mistakes found`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(failed === 0 ? 0 : 1);
}

// --planted: the module as it is passes, and each mistake fails, named.
const clean = runChecks(m, b, example).flatMap(([, errors]) => errors);
if (clean.length > 0) {
  console.log(`FAILED  the module itself does not pass the checks, so planted mistakes prove nothing:\n        ${clean.join('\n        ')}`);
  process.exit(1);
}
let missed = 0;
for (const p of PLANTED) {
  const mm = structuredClone(m);
  const bb = { schema: structuredClone(b.schema), global: new Map(b.global),
    sub: new Map([...b.sub].map(([k, v]) => [k, { options: new Map(v.options), positionals: v.positionals }])) };
  p.plant(mm, bb);
  const errors = runChecks(mm, bb, example).flatMap(([, e]) => e);
  const caught = errors.find((e) => p.expect.test(e));
  if (caught) {
    console.log(`caught  ${p.name}: ${caught}`);
  } else {
    missed += 1;
    console.log(`MISSED  ${p.name}: expected ${p.expect}, got ${errors.length ? errors.join('; ') : 'no error'}`);
  }
}
console.log(`${PLANTED.length - missed} of ${PLANTED.length} planted mistakes caught in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(missed === 0 ? 0 : 1);
