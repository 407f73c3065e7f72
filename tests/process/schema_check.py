"""Holds `leasehold store schema --json` against the tables `store init` made.

    schema_check.py ENDPOINT PREFIX SCHEMA_JSON_FILE

Describes each table of the schema on ENDPOINT (DynamoDB Local) with botocore,
the reference client, and compares what DynamoDB reports (keys, attribute
types, each index's keys and projection, the stream, on-demand billing) with
the CreateTable request the schema shows. Exits 1 naming every difference,
so a schema that says other than what `store init` does fails; 0 if equal.
"""

import json
import sys

import botocore.session


def keys(schema):
    return sorted((k["AttributeName"], k["KeyType"]) for k in schema)


def projection(p):
    return (p["ProjectionType"], sorted(p.get("NonKeyAttributes", [])))


def shape_of_request(request):
    return {
        "keys": keys(request["KeySchema"]),
        "attributes": sorted(
            (a["AttributeName"], a["AttributeType"]) for a in request["AttributeDefinitions"]
        ),
        "indexes": {
            g["IndexName"]: (keys(g["KeySchema"]), projection(g["Projection"]))
            for g in request.get("GlobalSecondaryIndexes", [])
        },
        "stream": request.get("StreamSpecification", {}).get("StreamViewType"),
        "billing": request["BillingMode"],
    }


def shape_of_table(table):
    stream = table.get("StreamSpecification", {})
    return {
        "keys": keys(table["KeySchema"]),
        "attributes": sorted(
            (a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]
        ),
        "indexes": {
            g["IndexName"]: (keys(g["KeySchema"]), projection(g["Projection"]))
            for g in table.get("GlobalSecondaryIndexes", [])
        },
        "stream": stream.get("StreamViewType") if stream.get("StreamEnabled") else None,
        "billing": table.get("BillingModeSummary", {}).get("BillingMode"),
    }


def main():
    endpoint, prefix, schema_file = sys.argv[1:4]
    with open(schema_file, encoding="utf-8") as f:
        schema = json.load(f)
    client = botocore.session.get_session().create_client(
        "dynamodb", region_name="us-east-1", endpoint_url=endpoint,
        aws_access_key_id="AKIDSCHEMA", aws_secret_access_key="schema-check")
    names = {prefix + t["TableName"] for t in schema["tables"]}
    listed = set(client.list_tables()["TableNames"])
    problems = []
    for name in sorted(n for n in listed if n.startswith(prefix) and n not in names):
        problems.append(f"{name}: made by store init, missing from the schema")
    for request in schema["tables"]:
        name = prefix + request["TableName"]
        if name not in listed:
            problems.append(f"{name}: in the schema, not made by store init")
            continue
        want = shape_of_request(request)
        have = shape_of_table(client.describe_table(TableName=name)["Table"])
        for part in want:
            if want[part] != have[part]:
                problems.append(f"{name}: {part}: schema says {want[part]}, table has {have[part]}")
    for p in problems:
        print(p)
    print(f"{len(schema['tables'])} tables compared, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
