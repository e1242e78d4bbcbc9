import { areaProviders } from "../Area.ts"
import * as ObjectStorage from "../s3/ObjectStorage.ts"

/** The storage add-on's objects: the bucket when SERVICE_S3_URL is set, else `<data dir>/storage`. */
export const StorageProviders = areaProviders({ name: "storage", fromEnv: ObjectStorage.objectStore })
