/**
 * The gRPC side of nodefleet's own provider plugin: the engine's ResourceProvider protocol
 * (pulumi/proto/pulumi/provider.proto) on @grpc/grpc-js with the message classes @pulumi/pulumi
 * ships. Written here instead of `@pulumi/pulumi/provider`'s `main` because that server drops the
 * provider's configuration (its Configure answers without reading it), and the cluster credentials
 * are exactly that: given once per stack on the provider, never copied into each member.
 */
import * as grpc from "@grpc/grpc-js";
import * as emptyproto from "google-protobuf/google/protobuf/empty_pb";
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { type ClusterAccess, type ResourceHandler, clusterAccessFromConfig, revealSecrets, wrapSecretOutputs } from "./resourceHandler";

type Unary<Req, Res> = (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => void;

/** The provider's configuration keys (`<package>:config:<key>`) that carry the cluster and the Robot credentials. */
const CREDENTIALS_CONFIG_KEY = "nodefleet:config:credentials";
const ROBOT_CREDENTIALS_CONFIG_KEY = "nodefleet:config:robotCredentials";

/** The provider's configuration properties, each compared by diffConfig (in place, never a replacement). */
const CONFIG_PROPERTIES = ["credentials", "robotCredentials"] as const;

function resourceType(urn: string): string {
  // urn:pulumi:<stack>::<project>::<parent types$>type::<name>
  const qualified = urn.split("::")[2] ?? "";
  return qualified.split("$").pop() ?? "";
}

function plain(struct: structproto.Struct | undefined): Record<string, unknown> {
  return revealSecrets((struct?.toJavaScript() ?? {}) as Record<string, unknown>) as Record<string, unknown>;
}

/** One handler call answered: its value, or its error as the engine shows it (message only, never a credential). */
function answer<Res>(callback: grpc.sendUnaryData<Res>, work: () => Promise<Res>): void {
  work().then(
    (response) => callback(null, response),
    (error: unknown) => callback({ code: grpc.status.UNKNOWN, details: error instanceof Error ? error.message : String(error) }, null),
  );
}

/** The ResourceProvider service over `handlers` (by type token), for the plugin process `version`. */
function providerService(version: string, handlers: Readonly<Record<string, ResourceHandler>>): grpc.UntypedServiceImplementation {
  let access: ClusterAccess = clusterAccessFromConfig(undefined);
  const handlerOf = (urn: string): ResourceHandler => {
    const type = resourceType(urn);
    const handler = handlers[type];
    if (!handler) throw new Error(`the nodefleet provider ${version} has no resource type ${type}`);
    return handler;
  };

  const getPluginInfo: Unary<emptyproto.Empty, plugproto.PluginInfo> = (_call, callback) =>
    callback(null, new plugproto.PluginInfo().setVersion(version));
  const getSchema: Unary<provproto.GetSchemaRequest, provproto.GetSchemaResponse> = (_call, callback) =>
    callback(null, new provproto.GetSchemaResponse().setSchema("{}"));
  const checkConfig: Unary<provproto.CheckRequest, provproto.CheckResponse> = (call, callback) =>
    callback(null, new provproto.CheckResponse().setInputs(call.request.getNews()));
  // New credentials (a rotated kubeconfig or Robot password, Robot credentials given to a provider
  // created before the plugin's rescue) update the provider in place: never a replacement, which
  // would replace every member resource the provider manages.
  const diffConfig: Unary<provproto.DiffRequest, provproto.DiffResponse> = (call, callback) => {
    const olds = plain(call.request.getOlds());
    const news = plain(call.request.getNews());
    const changed = CONFIG_PROPERTIES.filter((key) => (olds[key] ?? "") !== (news[key] ?? ""));
    const response = new provproto.DiffResponse().setChanges(
      changed.length > 0 ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE,
    );
    callback(null, changed.length > 0 ? response.setDiffsList(changed) : response);
  };
  const configure: Unary<provproto.ConfigureRequest, provproto.ConfigureResponse> = (call, callback) => {
    const args = plain(call.request.getArgs());
    const variables = call.request.getVariablesMap();
    const value = (key: string, variable: string) => (typeof args[key] === "string" ? (args[key] as string) : variables.get(variable));
    access = clusterAccessFromConfig(value("credentials", CREDENTIALS_CONFIG_KEY), value("robotCredentials", ROBOT_CREDENTIALS_CONFIG_KEY));
    callback(null, new provproto.ConfigureResponse().setAcceptsecrets(true).setSupportspreview(false));
  };

  const check: Unary<provproto.CheckRequest, provproto.CheckResponse> = (call, callback) =>
    answer(callback, async () => {
      const { inputs, failures } = handlerOf(call.request.getUrn()).check(plain(call.request.getNews()));
      const response = new provproto.CheckResponse().setInputs(structproto.Struct.fromJavaScript(inputs as never));
      return response.setFailuresList(failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)));
    });
  const diff: Unary<provproto.DiffRequest, provproto.DiffResponse> = (call, callback) =>
    answer(callback, async () => {
      const result = handlerOf(call.request.getUrn()).diff(plain(call.request.getOlds()), plain(call.request.getNews()));
      const changes = result.changed.length > 0;
      return new provproto.DiffResponse()
        .setChanges(changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE)
        .setDiffsList(result.changed)
        .setReplacesList(result.replaces)
        .setDeletebeforereplace(result.deleteBeforeReplace === true && result.replaces.length > 0);
    });
  const create: Unary<provproto.CreateRequest, provproto.CreateResponse> = (call, callback) =>
    answer(callback, async () => {
      const handler = handlerOf(call.request.getUrn());
      const result = await handler.create(plain(call.request.getProperties()), access);
      return new provproto.CreateResponse()
        .setId(result.id)
        .setProperties(structproto.Struct.fromJavaScript(wrapSecretOutputs(result.outs, handler.secretOutputs) as never));
    });
  // Nothing to read back that the engine could reconcile: a refresh keeps what the state holds.
  const read: Unary<provproto.ReadRequest, provproto.ReadResponse> = (call, callback) =>
    callback(
      null,
      new provproto.ReadResponse()
        .setId(call.request.getId())
        .setProperties(call.request.getProperties())
        .setInputs(call.request.getInputs()),
    );
  const update: Unary<provproto.UpdateRequest, provproto.UpdateResponse> = (call, callback) =>
    answer(callback, async () => {
      const handler = handlerOf(call.request.getUrn());
      const outs = await handler.update(call.request.getId(), plain(call.request.getOlds()), plain(call.request.getNews()), access);
      return new provproto.UpdateResponse().setProperties(
        structproto.Struct.fromJavaScript(wrapSecretOutputs(outs, handler.secretOutputs) as never),
      );
    });
  const remove: Unary<provproto.DeleteRequest, emptyproto.Empty> = (call, callback) =>
    answer(callback, async () => {
      await handlerOf(call.request.getUrn()).delete(call.request.getId(), plain(call.request.getProperties()), access);
      return new emptyproto.Empty();
    });
  const cancel: Unary<emptyproto.Empty, emptyproto.Empty> = (_call, callback) => callback(null, new emptyproto.Empty());

  return { getPluginInfo, getSchema, checkConfig, diffConfig, configure, check, diff, create, read, update, delete: remove, cancel };
}

/** Serves the provider on a loopback port and prints the port, as the engine expects of a plugin. */
export async function serveProvider(version: string, handlers: Readonly<Record<string, ResourceHandler>>): Promise<grpc.Server> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 400 * 1024 * 1024 });
  server.addService(provrpc.ResourceProviderService, providerService(version, handlers));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  process.stdout.write(`${port}\n`);
  return server;
}
