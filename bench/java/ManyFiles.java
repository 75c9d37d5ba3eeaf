// The reference engine's side of the huge-table benchmark (bench/huge.py): Apache Iceberg
// 1.10.2's own API, run in a JVM of its own. Not part of icepark (which ships no JVM code):
// bench/huge.py compiles it with javac against the reference engine's jars.
//
//   java ManyFiles build LOCATION MANIFESTS PER_MANIFEST
//       a table at LOCATION (HadoopTables: metadata/vN.metadata.json), partitioned by
//       day(ts), then MANIFESTS fast appends of PER_MANIFEST data files each (one manifest
//       per append). File i has ids [i * 1000, i * 1000 + 999], a ts on day
//       i * DAYS / total of 2025, and metrics for every column, as a Parquet writer reports
//       them; the files themselves are never written (only planning is timed).
//   java ManyFiles plan METADATA ROUNDS [ID]
//       times table.newScan().planFiles() (with equal("id", ID) when given), iterating every
//       task, ROUNDS times in one JVM; prints one JSON line per round and the heap in use.
//   java ManyFiles serve
//       the same, one plan per line read from stdin ("METADATA [ID]"), one JSON line each
//       (with the heap in use after it), so that a caller can alternate it with another
//       engine in one warm JVM.

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

public class ManyFiles {
  static final int DAYS = 365;
  static final long DAY_US = 86_400_000_000L;
  static final long START_US = 1_735_689_600_000_000L; // 2025-01-01T00:00:00Z

  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.required(2, "ts", Types.TimestampType.withZone()),
          Types.NestedField.optional(3, "category", Types.StringType.get()),
          Types.NestedField.optional(4, "amount", Types.DoubleType.get()),
          Types.NestedField.optional(5, "name", Types.StringType.get()));

  public static void main(String[] args) throws Exception {
    if (args[0].equals("build")) {
      build(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
    } else if (args[0].equals("plan")) {
      plan(args[1], Integer.parseInt(args[2]), args.length > 3 ? Long.valueOf(args[3]) : null);
    } else if (args[0].equals("serve")) {
      java.io.BufferedReader in =
          new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        String[] words = line.trim().split(" ");
        Long id = words.length > 1 ? Long.valueOf(words[1]) : null;
        planOnce(words[0], id, 0);
        System.out.println(String.format("{\"heap_in_use\": %d}", heapInUse()));
        System.out.flush();
      }
    } else {
      throw new IllegalArgumentException("build or plan, not " + args[0]);
    }
  }

  static ByteBuffer bound(Types.NestedField field, Object value) {
    return Conversions.toByteBuffer(field.type(), value);
  }

  static void build(String location, int manifests, int perManifest) {
    PartitionSpec spec = PartitionSpec.builderFor(SCHEMA).day("ts").build();
    Map<String, String> props = new HashMap<>();
    props.put(TableProperties.FORMAT_VERSION, "2");
    props.put(TableProperties.MANIFEST_MERGE_ENABLED, "false");
    Table table = new HadoopTables(new Configuration()).create(SCHEMA, spec, props, location);
    long total = (long) manifests * perManifest;
    long i = 0;
    for (int m = 0; m < manifests; m++) {
      AppendFiles append = table.newFastAppend();
      for (int k = 0; k < perManifest; k++, i++) {
        append.appendFile(file(table, spec, i, total));
      }
      append.commit();
      System.err.println("appended manifest " + (m + 1) + " of " + manifests);
    }
  }

  static DataFile file(Table table, PartitionSpec spec, long i, long total) {
    long day = i * DAYS / total;
    long rows = 1000;
    long tsLow = START_US + day * DAY_US + (i % 1000) * 1000;
    long tsHigh = tsLow + 999_000;
    Map<Integer, Long> sizes = new HashMap<>();
    Map<Integer, Long> values = new HashMap<>();
    Map<Integer, Long> nulls = new HashMap<>();
    Map<Integer, Long> nans = new HashMap<>();
    Map<Integer, ByteBuffer> lower = new HashMap<>();
    Map<Integer, ByteBuffer> upper = new HashMap<>();
    for (int id = 1; id <= 5; id++) {
      sizes.put(id, 4000L + id * 100 + (i % 97));
      values.put(id, rows);
      nulls.put(id, id <= 2 ? 0L : (i % 7));
    }
    nans.put(4, 0L);
    lower.put(1, bound(SCHEMA.findField(1), i * 1000));
    upper.put(1, bound(SCHEMA.findField(1), i * 1000 + 999));
    lower.put(2, bound(SCHEMA.findField(2), tsLow));
    upper.put(2, bound(SCHEMA.findField(2), tsHigh));
    lower.put(3, bound(SCHEMA.findField(3), "category-" + (i % 10)));
    upper.put(3, bound(SCHEMA.findField(3), "category-" + (i % 10 + 10)));
    lower.put(4, bound(SCHEMA.findField(4), -1000.0 - (i % 13)));
    upper.put(4, bound(SCHEMA.findField(4), 1000.0 + (i % 17)));
    lower.put(5, bound(SCHEMA.findField(5), "name-a" + (i % 100)));
    upper.put(5, bound(SCHEMA.findField(5), "name-z" + (i % 100)));
    Metrics metrics = new Metrics(rows, sizes, values, nulls, nans, lower, upper);
    String date = java.time.LocalDate.of(2025, 1, 1).plusDays(day).toString();
    return DataFiles.builder(spec)
        .withPath(
            String.format(
                "%s/data/ts_day=%s/%05d-0-6f2c1e7a-%012d.parquet",
                table.location(), date, i % 100_000, i))
        .withFormat(FileFormat.PARQUET)
        .withPartitionPath("ts_day=" + date)
        .withFileSizeInBytes(20_000 + (i % 1000))
        .withMetrics(metrics)
        .withSplitOffsets(java.util.List.of(4L))
        .build();
  }

  static long heapInUse() {
    Runtime rt = Runtime.getRuntime();
    for (int k = 0; k < 3; k++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  static void plan(String metadata, int rounds, Long id) throws Exception {
    for (int r = 0; r < rounds; r++) {
      planOnce(metadata, id, r);
    }
    System.out.println(String.format("{\"heap_in_use\": %d}", heapInUse()));
  }

  static void planOnce(String metadata, Long id, int round) throws Exception {
    long started = System.nanoTime();
    // a fresh table each time: the metadata file is read again, as a new query would
    Table table =
        new BaseTable(
            new StaticTableOperations(metadata, new HadoopFileIO(new Configuration())), metadata);
    TableScan scan = table.newScan();
    if (id != null) {
      scan = scan.filter(Expressions.equal("id", id));
    }
    long tasks = 0;
    long bytes = 0;
    String first = null;
    try (CloseableIterable<FileScanTask> planned = scan.planFiles()) {
      for (FileScanTask task : planned) {
        tasks++;
        bytes += task.file().fileSizeInBytes();
        if (first == null) {
          first = task.file().location();
        }
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.println(
        String.format(
            "{\"round\": %d, \"seconds\": %.4f, \"tasks\": %d, \"bytes\": %d, \"first\": \"%s\"}",
            round, seconds, tasks, bytes, first));
    System.out.flush();
  }
}
