// The AWS SDK baseline of `leasehold bench leases` on DynamoDB: the AWS SDK
// for JavaScript v3 renewing the benchmark's leases with the same conditional
// UpdateItem that leasehold sends (extend the expiry if the token is still
// ours and the lease has not expired), round-robin, for a fixed time.
//
//   node sdk_renew_loop.mjs CONFIG.json
//
// CONFIG: {"region", "endpoint" (optional), "table" (the physical name),
// "seconds" (may be fractional), "concurrency", "ttl_ms", "leases": [{"pk", "token"}]}.
// Credentials come from the SDK's default chain (the environment first), as
// leasehold's do. Prints one JSON line: {"updates", "elapsed_s", "failures",
// "error"}; the time to start node and the first request are not counted.
import { readFileSync } from 'node:fs';
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const client = new DynamoDBClient({
  region: config.region,
  ...(config.endpoint ? { endpoint: config.endpoint } : {}),
});

function renewal(lease) {
  const now = Date.now();
  return new UpdateItemCommand({
    TableName: config.table,
    Key: { pk: { S: lease.pk } },
    ReturnValues: 'UPDATED_NEW',
    UpdateExpression: 'SET #n0 = :v0, #n1 = :v1',
    ConditionExpression: '#n2 = :v2 AND #n3 = :v3 AND #n1 > :v4 AND #n0 <= :v5',
    ExpressionAttributeNames: {
      '#n0': 'lease_heartbeat_at_ms',
      '#n1': 'lease_expires_at_ms',
      '#n2': 'lease_owner',
      '#n3': 'lease_token',
    },
    ExpressionAttributeValues: {
      ':v0': { N: String(now) },
      ':v1': { N: String(now + config.ttl_ms) },
      ':v2': { S: lease.owner },
      ':v3': { S: lease.token },
      ':v4': { N: String(now) },
      ':v5': { N: String(now) },
    },
  });
}

let updates = 0;
let failures = 0;
let error = null;

async function loop(first, until) {
  for (let i = first; performance.now() < until; i += config.concurrency) {
    if (i >= config.leases.length) i = first;
    try {
      await client.send(renewal(config.leases[i]));
      updates += 1;
    } catch (e) {
      failures += 1;
      error ??= `${e.name}: ${e.message}`;
    }
  }
}

try {
  await client.send(renewal(config.leases[0]));  // connect, and load the SDK's lazy parts
  const start = performance.now();
  const until = start + config.seconds * 1000;
  const loops = [];
  for (let t = 0; t < config.concurrency; t += 1) loops.push(loop(t, until));
  await Promise.all(loops);
  const elapsed = (performance.now() - start) / 1000;
  console.log(JSON.stringify({ updates, elapsed_s: elapsed, failures, error }));
} catch (e) {
  console.log(JSON.stringify({ updates: 0, elapsed_s: 0, failures: 1, error: `${e.name}: ${e.message}` }));
}
client.destroy();
