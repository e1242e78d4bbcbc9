import {
  Ai,
  Billing,
  Database,
  Deployments,
  Domains,
  Email,
  EndUser,
  Git,
  Identity,
  Kernel,
  Mail,
  Storage,
  Tls
} from "@hostplane/core"
import { Layer } from "effect"

/**
 * Every port core needs beyond the stores, settings, DNS, crypto and bundles, in its explicit `off` form (ids by Web
 * Crypto): what a test or an example builds on when it exercises none of those providers. A test that needs one
 * merges the real or fake adapter after this layer (the last layer of a merge wins).
 */
export const portsOff = Layer.mergeAll(
  Kernel.Tokens.layer,
  Identity.IdentityProvider.off,
  Billing.PaymentGateway.off,
  Mail.MailTransport.off,
  Email.MailNotifications.off,
  Git.GitStorage.off,
  Git.SshKeyParser.off,
  Ai.AiUpstream.off,
  Domains.Registrar.off,
  Database.DatabaseNode.off,
  Database.BackupStore.off,
  Storage.ObjectStore.off,
  EndUser.SocialOAuth.off,
  EndUser.EndUserDirectory.off,
  Tls.TlsConfig.off,
  Tls.AcmeClient.off,
  Deployments.WorkerCheck.off
)
