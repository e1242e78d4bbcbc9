import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import S3rver from "s3rver"
import { Context, Effect, Layer } from "effect"

/** A running s3rver: the bucket's path-style URL, its keys, and the folder that holds its objects. */
export interface S3rverBucketInfo {
  /** `http://127.0.0.1:<port>/<bucket>`: what `SERVICE_S3_URL` takes. */
  readonly url: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** Where s3rver keeps the bucket's objects on disk. */
  readonly directory: string
}

/**
 * Starts s3rver (a real S3 server: the REST API over the local file system) on a free loopback port with one empty
 * bucket. It checks neither signatures nor conditional writes: tests of those rules record requests instead.
 */
export const startS3rver = async (bucket = "hostplane") => {
  const directory = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-s3rver-"))
  const serve = (port: number) =>
    new S3rver({
      address: "127.0.0.1",
      port,
      silent: true,
      directory,
      configureBuckets: [{ name: bucket, configs: [] }]
    })
  let server: S3rver | undefined = serve(0)
  const { port } = await server.run()
  const stop = async () => {
    await server?.close()
    server = undefined
  }
  return {
    url: `http://127.0.0.1:${port}/${bucket}`,
    // s3rver's built-in account.
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    directory,
    /** Stops answering (the port refuses connections), keeping the objects: a bucket that went down. */
    stop,
    /** Answers again on the same port, with the same objects. */
    start: async () => {
      server ??= serve(port)
      await server.run()
    },
    close: async () => {
      await stop()
      await Fs.rm(directory, { recursive: true, force: true })
    }
  }
}

/** A running s3rver for a test's layers: started with the layer, closed and removed when it is released. */
export class S3rverBucket extends Context.Service<S3rverBucket, S3rverBucketInfo>()("@hostplane/testkit/S3rverBucket") {
  static readonly layer: Layer.Layer<S3rverBucket> = Layer.effect(
    S3rverBucket,
    Effect.acquireRelease(
      Effect.promise(() => startS3rver()),
      (server) => Effect.promise(() => server.close())
    )
  )
}
