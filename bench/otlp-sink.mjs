// An OTLP/HTTP trace receiver for the benchmarks, in a process of its own so that its work is not counted as
// the gateway's: it reads each export (JSON), counts its spans and answers 200 as a collector does. Prints
// its endpoint on the first line of stdout; `GET /count` answers the spans received so far.
/* global process, console, Buffer */
import http from 'node:http';

let spans = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.end(String(spans));
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    for (const resource of body.resourceSpans ?? []) {
      for (const scope of resource.scopeSpans ?? []) spans += scope.spans?.length ?? 0;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1/traces`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
