// Interoperability with the AWS SDK for JavaScript, against dynalite on
// loopback: an item the SDK writes in the documented schema (docs/schema.md)
// is read correctly by leasehold, and an item leasehold writes is read back
// by the SDK with the documented types.
//
//   node tests/dynamodb/sdk_interop_test.mjs build/bin/leasehold
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const dynalite = require('dynalite');
const {
  DynamoDBClient, PutItemCommand, GetItemCommand, UpdateItemCommand,
} = require('@aws-sdk/client-dynamodb');

const bin = process.argv[2];
assert.ok(bin, 'usage: sdk_interop_test.mjs LEASEHOLD_BINARY');

const server = dynalite({ createTableMs: 0, updateTableMs: 0, deleteTableMs: 0 });
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${server.address().port}`;
const credentials = { accessKeyId: 'AKIDINTEROP', secretAccessKey: 'interop-secret' };
const env = {
  ...process.env,
  AWS_ACCESS_KEY_ID: credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
  LEASEHOLD_STORE: `dynamodb://us-east-1/interop_?endpoint=${endpoint}`,
};
const client = new DynamoDBClient({ region: 'us-east-1', endpoint, credentials });

// Asynchronous: dynalite runs in this very process and must keep answering.
function leasehold(...args) {
  return new Promise((resolve) => {
    execFile(bin, args, { env, encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, out: stdout.trim(), err: stderr.trim() });
    });
  });
}

let passed = 0;
let failed = 0;
async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}\n${e.stack}`);
  }
}

await check('store init creates the tables', async () => {
  const r = await leasehold('store', 'init');
  assert.equal(r.code, 0, r.err);
});

await check('leasehold reads a lease the SDK wrote', async () => {
  const now = Date.now();
  const token = '0123456789abcdef0123456789abcdef';
  await client.send(new PutItemCommand({
    TableName: 'interop_leases',
    Item: {
      pk: { S: 'sdk-key' },
      kind: { S: 'lease' },
      lease_owner: { S: 'sdk-worker' },
      lease_token: { S: token },
      lease_epoch: { N: '7' },
      lease_acquired_at_ms: { N: String(now) },
      lease_heartbeat_at_ms: { N: String(now) },
      lease_expires_at_ms: { N: String(now + 60_000) },
    },
  }));
  const shown = await leasehold('lease', 'show', 'sdk-key');
  assert.equal(shown.code, 0, shown.err);
  const view = JSON.parse(shown.out);
  assert.equal(view.owner, 'sdk-worker');
  assert.equal(view.epoch, 7);
  assert.equal(view.expires_at_ms, now + 60_000);
  assert.equal(view.held, true);
  // The SDK's lease is honoured: another owner is refused, the token renews it.
  assert.equal((await leasehold('lease', 'acquire', 'sdk-key', '--owner', 'other')).code, 3);
  const renewed = await leasehold('lease', 'renew', 'sdk-key', '--owner', 'sdk-worker', '--token',
    token, '--ttl', '30s');
  assert.equal(renewed.code, 0, renewed.err);
  assert.equal(JSON.parse(renewed.out).epoch, 7);
});

await check('the SDK reads a lease leasehold wrote, with the documented types', async () => {
  const r = await leasehold('lease', 'acquire', 'lh-key', '--owner', 'lh-worker', '--holder', 'Zoë');
  assert.equal(r.code, 0, r.err);
  const lease = JSON.parse(r.out);
  const got = await client.send(new GetItemCommand({
    TableName: 'interop_leases', Key: { pk: { S: 'lh-key' } }, ConsistentRead: true,
  }));
  const item = got.Item;
  assert.deepEqual(item.pk, { S: 'lh-key' });
  assert.deepEqual(item.kind, { S: 'lease' });
  assert.deepEqual(item.lease_owner, { S: 'lh-worker' });
  assert.deepEqual(item.lease_holder, { S: 'Zoë' });
  assert.deepEqual(item.lease_token, { S: lease.token });
  assert.deepEqual(item.lease_epoch, { N: String(lease.epoch) });
  assert.deepEqual(item.lease_acquired_at_ms, { N: String(lease.acquired_at_ms) });
  assert.deepEqual(item.lease_expires_at_ms, { N: String(lease.expires_at_ms) });
});

// The stream fleet's reference pattern, written with the SDK as its own code
// writes it: it takes an expired lease by setting only lease_owner and
// lease_expires_at_ms, so the previous holder's token stays in the item.
async function referenceAcquire(key, worker, ttlMs) {
  const now = Date.now();
  await client.send(new UpdateItemCommand({
    TableName: 'interop_leases',
    Key: { pk: { S: key } },
    ConditionExpression: 'attribute_not_exists(lease_owner) OR lease_expires_at_ms < :now',
    UpdateExpression: 'SET lease_owner = :w, lease_expires_at_ms = :exp',
    ExpressionAttributeValues: {
      ':now': { N: String(now) }, ':w': { S: worker }, ':exp': { N: String(now + ttlMs) },
    },
  }));
}

await check('a token-less takeover by the reference pattern is never undone by the old token', async () => {
  const r = await leasehold('lease', 'acquire', 'mixed-key', '--owner', 'lh-worker', '--ttl', '1s');
  assert.equal(r.code, 0, r.err);
  const old = JSON.parse(r.out);
  // The reference worker tries until the 1 s lease has expired (10 s at most).
  for (const deadline = Date.now() + 10_000; ;) {
    try {
      await referenceAcquire('mixed-key', 'ref-worker', 60_000);
      break;
    } catch (e) {
      if (e.name !== 'ConditionalCheckFailedException' || Date.now() > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const taken = await client.send(new GetItemCommand({
    TableName: 'interop_leases', Key: { pk: { S: 'mixed-key' } }, ConsistentRead: true,
  }));
  assert.deepEqual(taken.Item.lease_token, { S: old.token }, 'the old token is still in place');
  for (const args of [['renew', '--ttl', '20s'], ['release'], ['release', '--mode', 'clear']]) {
    const [command, ...flags] = args;
    const refused = await leasehold('lease', command, 'mixed-key', '--owner', 'lh-worker',
      '--token', old.token, ...flags);
    assert.equal(refused.code, 3, `${args.join(' ')}: ${refused.err}`);
    assert.equal(JSON.parse(refused.out).owner, 'ref-worker');
  }
  const after = await client.send(new GetItemCommand({
    TableName: 'interop_leases', Key: { pk: { S: 'mixed-key' } }, ConsistentRead: true,
  }));
  assert.deepEqual(after.Item, taken.Item, 'the reference worker\'s lease is untouched');
  const contender = await leasehold('lease', 'acquire', 'mixed-key', '--owner', 'third');
  assert.equal(contender.code, 3, contender.err);
});

await check('leasehold refuses an attribute type it does not store, rather than misread it', async () => {
  await client.send(new PutItemCommand({
    TableName: 'interop_leases',
    Item: { pk: { S: 'odd-key' }, lease_owner: { S: 'x' }, lease_epoch: { N: '1.5' } },
  }));
  const r = await leasehold('lease', 'show', 'odd-key');
  assert.equal(r.code, 1, r.out);
  assert.match(r.err, /lease_epoch/);
});

server.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
