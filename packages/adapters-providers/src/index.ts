import { providersOf } from "./Area.ts"
import { areas } from "./areas.ts"

export * as IdentityProviderOAuth from "./identity/IdentityProviderOAuth.ts"
export * as SocialOAuthHttp from "./enduser/SocialOAuthHttp.ts"
export * as MailTransportAuto from "./mail/MailTransportAuto.ts"
export * as MailTransportOutboxDir from "./mail/MailTransportOutboxDir.ts"
export * as MailTransportSmtp from "./mail/MailTransportSmtp.ts"
export * as MailNotificationsSns from "./mail/MailNotificationsSns.ts"
export * as PasswordHasherScrypt from "./access/PasswordHasherScrypt.ts"
export * as SealerAesGcm from "./secrets/SealerAesGcm.ts"
export * as DnsResolverUdp from "./dns/DnsResolverUdp.ts"
export * as ArtifactStoreDisk from "./deployments/ArtifactStoreDisk.ts"
export * as BundleReader from "./deployments/BundleReader.ts"
export * as TokensNode from "./kernel/TokensNode.ts"
export * as BackupStoreDisk from "./database/BackupStoreDisk.ts"
export * as ObjectStoreDisk from "./storage/ObjectStoreDisk.ts"
export * as RegistrarNameCom from "./domains/RegistrarNameCom.ts"
export * as PaymentGatewayPolar from "./payment/PaymentGatewayPolar.ts"
export * as GitStorageDisk from "./git/GitStorageDisk.ts"
export * as GitSshServer from "./git/GitSshServer.ts"
export * as SshKeyParserSsh2 from "./git/SshKeyParserSsh2.ts"
export * as AiUpstreamOpenAi from "./ai/AiUpstreamOpenAi.ts"
export * as S3Bucket from "./s3/S3Bucket.ts"
export * as ArtifactStoreS3 from "./deployments/ArtifactStoreS3.ts"
export * as BackupStoreS3 from "./database/BackupStoreS3.ts"
export * as ObjectStoreS3 from "./storage/ObjectStoreS3.ts"
export * as ObjectStorage from "./s3/ObjectStorage.ts"
export { type AnyAreaProviders, type AreaProviders, areaProviders, providersOf } from "./Area.ts"
export { areas } from "./areas.ts"

/**
 * Every area's provider adapters read from `SERVICE_*`, as the standalone server runs them (the AI upstream reads
 * `AiConfig`: provide the settings). The PostgreSQL-level ones (database clusters, end-user directory) are
 * `@hostplane/adapters-pg`'s `providersFromEnv`.
 */
export const providersFromEnv = providersOf(areas)
