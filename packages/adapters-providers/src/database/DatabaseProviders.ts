import { areaProviders } from "../Area.ts"
import * as ObjectStorage from "../s3/ObjectStorage.ts"

/**
 * The database add-on's generations and exports: the bucket when SERVICE_S3_URL is set, else `<data dir>/backups`.
 * Its clusters are the PostgreSQL adapters' (`DatabaseAreaPg`).
 */
export const DatabaseProviders = areaProviders({ name: "database", fromEnv: ObjectStorage.backupStore })
