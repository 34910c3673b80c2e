// Baseline for the server rows: a bare Fastify returning the same page object (read once from
// the file named by argv[2]) on every request, no auth, no database.
import Fastify from 'fastify';
import { readFileSync } from 'node:fs';

const page = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const app = Fastify({ logger: false });
app.get('/*', async () => page);
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`URL: ${address}\n`);
