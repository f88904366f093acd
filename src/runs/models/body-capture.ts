/**
 * The exact bytes of a model turn, for the `run.turn` audit record's hashes: a `fetch` handed to
 * the provider's SDK that keeps the request body as sent and a copy of the response body as
 * received (a streamed answer as its raw event stream). Headers — where the key travels — are
 * never kept.
 */
export interface BodyCapture {
  fetch: typeof globalThis.fetch;
  requestBody(): string;
  /** The response body as received; settles when the SDK has read it all. */
  responseBody(): Promise<string>;
}

export function captureBodies(): BodyCapture {
  let requestBody = '';
  let responseText: Promise<string> = Promise.resolve('');
  const capturingFetch: typeof globalThis.fetch = async (input, init) => {
    requestBody = typeof init?.body === 'string' ? init.body : '';
    const response = await globalThis.fetch(input, init);
    if (!response.ok || !response.body) {
      responseText = Promise.resolve('');
      return response;
    }
    const [forSdk, forRecord] = response.body.tee();
    // An abandoned stream (cancel, timeout) rejects this copy; nobody reads it then.
    responseText = new Response(forRecord).text();
    responseText.catch(() => undefined);
    return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch: capturingFetch, requestBody: () => requestBody, responseBody: () => responseText };
}
