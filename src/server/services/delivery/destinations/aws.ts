// What the AWS destinations (s3, kinesis, firehose) share: the client settings from a sink's
// config (region, an endpoint for S3-compatible stores and emulators, static keys or else the
// SDK's standard credential chain: environment, shared files, SSO, instance role), always the
// HTTP/1.1 handler (the Kinesis client defaults to HTTP/2, which moto and kinesalite refuse),
// and the SDK's errors worded for the sink's state. The SDK is loaded by open(), never at start.
import type { ConfigProblem } from '../sink.js';
import { SinkError } from '../sink.js';
import { urlProblem } from './http.js';

// A type, not an interface: destination configs must be assignable to Record<string, unknown>.
export type AwsConfig = {
  region?: string;
  endpoint?: string;
  access_key_id?: string;
  secret_access_key?: string;
};

export const AWS_KEYS = ['region', 'endpoint', 'access_key_id', 'secret_access_key'] as const;

export async function clientSettings(c: AwsConfig): Promise<Record<string, unknown>> {
  const { NodeHttpHandler } = await import('@smithy/node-http-handler');
  return {
    region: c.region ?? process.env.AWS_REGION ?? 'us-east-1',
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    ...(c.access_key_id ? { credentials: { accessKeyId: c.access_key_id, secretAccessKey: c.secret_access_key ?? '' } } : {}),
    requestHandler: new NodeHttpHandler({ connectionTimeout: 10_000, requestTimeout: 60_000 }),
    maxAttempts: 2,
  };
}

export function awsCheck(c: AwsConfig & Record<string, unknown>): ConfigProblem | undefined {
  if (c.endpoint !== undefined) {
    const p = urlProblem(c.endpoint, ['http', 'https'], 'endpoint');
    if (p) return p;
  }
  if (c.region !== undefined && !/^[a-z]{2}(-[a-z0-9]+)+-\d+$/.test(c.region) && !/^[a-z0-9-]{1,64}$/.test(c.region))
    return { field: 'region', message: `"${c.region}" is not an AWS region` };
  const hasSecret = c.secret_access_key !== undefined || c.secret_access_key_env !== undefined || c.secret_access_key_file !== undefined;
  if (hasSecret && c.access_key_id === undefined) return { field: 'access_key_id', message: 'a secret_access_key needs its access_key_id' };
  if (c.access_key_id !== undefined && !hasSecret)
    return {
      field: 'secret_access_key',
      message: 'an access_key_id needs its secret_access_key (or neither: the standard AWS credential chain)',
    };
  return undefined;
}

/** An SDK error as a retryable SinkError naming the call. */
export function awsError(what: string, e: unknown): SinkError {
  const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; code?: string };
  const status = err.$metadata?.httpStatusCode ? ` (HTTP ${err.$metadata.httpStatusCode})` : '';
  return new SinkError(
    `${what}: ${err.name && err.name !== 'Error' ? `${err.name}: ` : ''}${err.message ?? err.code ?? String(e)}${status}`,
  );
}
