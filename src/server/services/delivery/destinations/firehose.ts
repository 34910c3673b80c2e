// firehose: PutRecordBatch to a delivery stream, one record per log entry (records.ts: limits,
// failed records retried, oversized ones rejected); each record ends in "\n", since Firehose
// concatenates records into the objects it delivers.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination } from '../sink.js';
import { awsCheck, clientSettings, type AwsConfig } from './aws.js';
import { MAX_RECORDS, RecordSink, awsProps } from './records.js';

type FirehoseConfig = AwsConfig & { delivery_stream: string };

export const firehose: Destination<FirehoseConfig> = {
  type: 'firehose',
  schema: Type.Object(
    { delivery_stream: Type.String({ pattern: '^[a-zA-Z0-9_.-]{1,64}$' }), ...awsProps },
    { additionalProperties: false },
  ),
  secrets: ['secret_access_key'],
  check: (config): ConfigProblem | undefined => awsCheck(config),
  batch: { maxEntries: MAX_RECORDS * 4, maxBytes: 12 * 1024 * 1024 },
  async open(config) {
    const { FirehoseClient, PutRecordBatchCommand } = await import('@aws-sdk/client-firehose');
    const client = new FirehoseClient(await clientSettings(config));
    return new RecordSink(
      {
        async put(records) {
          const out = await client.send(
            new PutRecordBatchCommand({ DeliveryStreamName: config.delivery_stream, Records: records.map((r) => ({ Data: r.data })) }),
          );
          return (out.RequestResponses ?? []).map((r) => r.ErrorCode ?? (r.RecordId ? undefined : 'no record id'));
        },
        close: () => client.destroy(),
      },
      4 * 1024 * 1024,
      `firehose PutRecordBatch ${config.delivery_stream}`,
    );
  },
  doc: {
    wire: 'PutRecordBatch: one record per entry (the line + "\\n"), <= 500 records / 4 MiB a call, only failed records retried',
    verified: 'moto 5.2.5 (an AWS emulator: there is no installable Firehose), delivering into its S3',
  },
};
