package executor.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Runs an embedded Neo4j Community DBMS with the Bolt connector until the process is stopped.
 *
 * Arguments: HOME_DIR [HOST] [PORT]. The password comes from NEO4J_PASSWORD (never from argv, which
 * `ps` shows). Memory is kept small on purpose: the machine is shared and the test graphs are tiny.
 */
public final class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher HOME_DIR [HOST] [PORT]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String host = args.length > 1 ? args[1] : "127.0.0.1";
        int port = args.length > 2 ? Integer.parseInt(args[2]) : 7687;
        String password = System.getenv().getOrDefault("NEO4J_PASSWORD", "executor-neo4j");
        Files.createDirectories(home);

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(128))
                .setConfig(GraphDatabaseSettings.memory_transaction_global_max_size, ByteUnit.mebiBytes(256))
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            dbms.shutdown();
            stopped.countDown();
        }));
        // A fresh store's neo4j user has the default password and must change it before anything
        // else; set ours once, and without the change-on-first-login flag the drivers cannot satisfy.
        dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME).executeTransactionally(
                "ALTER USER neo4j SET PLAINTEXT PASSWORD $password CHANGE NOT REQUIRED",
                java.util.Map.of("password", password));
        System.out.println("neo4j ready on bolt://" + host + ":" + port + " (home " + home + ")");
        System.out.flush();
        stopped.await();
    }
}
